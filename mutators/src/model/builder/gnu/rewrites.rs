//! Same-length rewrites of GNU constructs in the parse text before parsing (`__int128`,
//! `__real__`, `__alignof__`, `__builtin_types_compatible_p`, labels as values, computed `goto`,
//! `__label__`, attributes of `struct`/`union`/`enum` heads), so that offsets stay unchanged.

use super::attributes::changes_type_text;
use super::tokens::{matching_paren, tokens, Token};

/// Same-length rewrites of the seed's own code (from `body_start` on) that lang-c cannot parse;
/// returns where labels are taken as values (`&&label`), as offsets from `body_start`.
pub(crate) fn rewrite(parse_text: &mut String, body_start: usize) -> Vec<usize> {
    let mut changes: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut label_addresses = Vec::new();
    let text = &parse_text[body_start..];
    let bytes = text.as_bytes();
    let tokens = tokens(text);
    // Where a `struct`, `union` or `enum` head takes attributes: after the keyword, after its tag.
    #[derive(PartialEq)]
    enum Head {
        None,
        Keyword,
        Tag,
    }
    let mut head = Head::None;
    // Tokens inside a replaced attribute or call are passed over.
    let mut skip_until = 0;
    for (index, (range, token)) in tokens.iter().cloned().enumerate() {
        if range.start < skip_until {
            continue;
        }
        let word = &text[range.clone()];
        if token == Token::Word && head != Head::None {
            if matches!(word, "__attribute__" | "__attribute") {
                if let Some(open) = text[range.end..].find('(').map(|o| o + range.end) {
                    if let Some(close) = matching_paren(text, open) {
                        if !changes_type_text(&text[open..close]) {
                            changes.push((range.start..close + 1, ""));
                        }
                        skip_until = close + 1;
                    }
                }
                continue;
            }
            if head == Head::Keyword {
                head = Head::Tag;
                continue;
            }
        }
        head = Head::None;
        if token == Token::Punct && bytes[range.start] == b'&' && index > 0 {
            // `&&label` where an operand is expected (after an operator, a `(`, `=`, `,`, `{`
            // or `return`; `a && b` follows an operand) is the label's address: an integer
            // constant stands for it, so lang-c parses the expression.
            let (before, before_token) = &tokens[index - 1];
            let operand_before = match before_token {
                Token::Word => text[before.clone()] != *"return",
                Token::Literal => true,
                Token::Punct => matches!(bytes[before.start], b')' | b']'),
            };
            let label = tokens.get(index + 2).filter(|(_, t)| *t == Token::Word);
            let second = tokens
                .get(index + 1)
                .filter(|(r, _)| r.start == range.end && bytes[r.start] == b'&');
            if let (false, Some(_), Some((label, _))) = (operand_before, second, label) {
                if bytes[before.start] != b'&' || before.end != range.start {
                    changes.push((range.start..label.end, "0"));
                    label_addresses.push(range.start);
                    skip_until = label.end;
                }
            }
            continue;
        }
        if token != Token::Word {
            continue;
        }
        match word {
            // `goto *expression;`: an identifier stands for the expression, so lang-c parses a
            // `goto` (the model gives it no target label).
            "goto" => {
                let star = tokens
                    .get(index + 1)
                    .filter(|(r, t)| *t == Token::Punct && bytes[r.start] == b'*');
                if let Some((star, _)) = star {
                    if let Some(end) = statement_end(text, star.start) {
                        changes.push((star.start..end, "_"));
                        skip_until = end;
                    }
                }
            }
            // `__label__ a, b;` declares labels local to a block: the labels themselves are
            // statements of the model, and it has no scopes for labels.
            "__label__" => {
                if let Some(end) = statement_end(text, range.end) {
                    changes.push((range.start..end + 1, ""));
                    skip_until = end + 1;
                }
            }
            "__int128" | "__int128_t" | "__uint128_t" => changes.push((range, "_Float64")),
            "__real__" | "__imag__" | "__real" | "__imag" => changes.push((range, "+")),
            "__alignof__" | "__alignof" => changes.push((range, "sizeof")),
            "__builtin_types_compatible_p" => {
                if let Some(open) = text[range.end..].find('(').map(|o| o + range.end) {
                    if text[range.end..open].trim().is_empty() {
                        if let Some(close) = matching_paren(text, open) {
                            changes.push((range.start..close + 1, "+1"));
                            skip_until = close + 1;
                        }
                    }
                }
            }
            "struct" | "union" | "enum" => head = Head::Keyword,
            _ => {}
        }
    }
    for (range, replacement) in changes {
        let range = range.start + body_start..range.end + body_start;
        let len = range.len();
        debug_assert!(replacement.len() <= len);
        let mut new = String::with_capacity(len);
        new.push_str(replacement);
        // Line breaks stay where they were, so that lang-c's positions stay right.
        for c in parse_text[range.clone()].chars().skip(replacement.len()) {
            new.push(if c == '\n' { '\n' } else { ' ' });
        }
        if new.len() == len {
            parse_text.replace_range(range, &new);
        }
    }
    label_addresses
}

/// The offset of the `;` that ends the statement going on at `from` (outside parentheses).
fn statement_end(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0i64;
    for (range, token) in tokens(&text[from..]) {
        if token != Token::Punct {
            continue;
        }
        match text.as_bytes()[from + range.start] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' if depth == 0 => return Some(from + range.start),
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
}
