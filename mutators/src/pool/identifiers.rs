//! The identifiers in a statement's C text, with their byte ranges and what the token before
//! each says it names (an ordinary identifier, a member, a tag), skipping literals and
//! comments.

/// A token of C text relevant to renaming.
enum Token {
    Ident,
    Punct,
}

/// What an identifier can be, from the token before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IdentRole {
    /// A variable, function, typedef or enumerator.
    Ordinary,
    /// After `.` or `->`.
    Member,
    /// After `struct`, `union` or `enum`.
    Tag,
}

/// Identifiers of C text with their byte ranges and roles, skipping literals and comments.
pub(super) fn identifiers(text: &str) -> Vec<(std::ops::Range<usize>, IdentRole)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut previous: Option<(Token, std::ops::Range<usize>)> = None;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != c {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            previous = Some((Token::Punct, i - 1..i));
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..].find("*/").map_or(bytes.len(), |e| i + 2 + e + 2);
        } else if text[i..].starts_with("//") {
            i = text[i..].find('\n').map_or(bytes.len(), |e| i + e);
        } else if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            // A pp-number: digits, letters, dots, and signs after an exponent.
            i += 1;
            while i < bytes.len() {
                let d = bytes[i];
                let exponent_sign = (d == b'+' || d == b'-') && matches!(bytes[i - 1], b'e' | b'E' | b'p' | b'P');
                if d.is_ascii_alphanumeric() || d == b'.' || d == b'_' || exponent_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            previous = Some((Token::Punct, i - 1..i));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let role = match &previous {
                Some((Token::Punct, r)) if matches!(&text[r.clone()], "." | "->") => IdentRole::Member,
                Some((Token::Ident, r)) if matches!(&text[r.clone()], "struct" | "union" | "enum") => IdentRole::Tag,
                _ => IdentRole::Ordinary,
            };
            out.push((start..i, role));
            previous = Some((Token::Ident, start..i));
        } else {
            let len = if text[i..].starts_with("->") { 2 } else { 1 };
            previous = Some((Token::Punct, i..i + len));
            i += len;
        }
    }
    out
}
