//! The small lexer of preprocessed text that the rewrites and repairs share: words, literals
//! and punctuation, and matching parentheses.

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Token {
    Word,
    /// A number or a string or character literal (its last byte).
    Literal,
    Punct,
}

/// Identifiers and keywords, and other non-blank characters one by one, skipping string and
/// character literals (preprocessed text has no comments).
pub(super) fn tokens(text: &str) -> Vec<(std::ops::Range<usize>, Token)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start..i, Token::Word));
        } else if b.is_ascii_digit() {
            // A number with its suffix (`1.0i`, `0x1p3f`): no identifier starts inside it.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                i += 1;
            }
            out.push((i - 1..i, Token::Literal));
        } else if b == b'"' || b == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push((i.min(bytes.len()) - 1..i.min(bytes.len()), Token::Literal));
        } else {
            if !b.is_ascii_whitespace() {
                out.push((i..i + 1, Token::Punct));
            }
            i += 1;
        }
    }
    out
}

/// The offset of the parenthesis that closes the one at `open`, skipping literals.
pub(super) fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (range, token) in tokens(&text[open..]) {
        if token != Token::Punct {
            continue;
        }
        match text.as_bytes()[open + range.start] {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + range.start);
                }
            }
            _ => {}
        }
    }
    None
}
