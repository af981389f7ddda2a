//! Repairs after a syntax error: text inserted where lang-c stopped (C89 implicit `int`, `0` in
//! an empty initializer or for an omitted conditional operand) or a top-level `asm` blanked, and
//! the [`Insertions`] that map parse-text offsets back to seed-text offsets.

use super::tokens::{matching_paren, tokens, Token};

/// The most repairs tried on one seed (each one parses the text again).
pub(crate) const MAX_REPAIRS: usize = 256;

/// Texts inserted into the parse text: (offset in the parse text, length), in text order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Insertions(Vec<(usize, usize)>);

impl Insertions {
    fn insert(&mut self, at: usize, len: usize) {
        let index = self.0.partition_point(|&(o, _)| o < at);
        for later in &mut self.0[index..] {
            later.0 += len;
        }
        self.0.insert(index, (at, len));
    }

    /// The offset in the text without the insertions of a parse-text offset (an offset inside an
    /// inserted text maps to where it was inserted).
    pub(crate) fn original(&self, parse_offset: usize) -> usize {
        let mut removed = 0;
        for &(at, len) in &self.0 {
            if at >= parse_offset {
                break;
            }
            removed += len.min(parse_offset - at);
        }
        parse_offset - removed
    }
}

/// A change of the parse text after a syntax error.
enum Repair {
    Insert(usize, &'static str),
    Blank(std::ops::Range<usize>),
}

/// Changes `parse_text` so that lang-c gets past the syntax error at `offset` (where it
/// expected one of `expected`), if the error is one of the GNU C or C89 forms that [`repair`]
/// knows; `body_start` is where the seed's own code starts (the headers are never changed).
pub(crate) fn repair(
    parse_text: &mut String,
    insertions: &mut Insertions,
    offset: usize,
    expected: &[&str],
    body_start: usize,
) -> bool {
    if offset < body_start || offset > parse_text.len() {
        return false;
    }
    let Some(repair) = find_repair(parse_text, offset, expected) else {
        return false;
    };
    match repair {
        Repair::Insert(at, text) => {
            parse_text.insert_str(at, text);
            insertions.insert(at, text.len());
        }
        Repair::Blank(range) => blank(parse_text, range),
    }
    true
}

fn find_repair(text: &str, offset: usize, expected: &[&str]) -> Option<Repair> {
    let bytes = text.as_bytes();
    let before = text[..offset].trim_end();
    let previous = before.bytes().last();
    let word = word_at(text, offset);
    if word.is_empty() {
        return match (bytes.get(offset), previous) {
            // `(struct S){}`, `= {}`: an empty initializer.
            (Some(b'}'), Some(b'{')) => Some(Repair::Insert(offset, "0")),
            // `a ?: b`: the omitted operand is the condition (the copy is never evaluated).
            (Some(b':'), Some(b'?')) => Some(Repair::Insert(offset, "0")),
            _ => None,
        };
    }
    if matches!(word, "asm" | "__asm" | "__asm__") && brace_depth(before) == 0 {
        // A top-level `asm ("...");` defines nothing the program's C code declares.
        let open = offset + word.len() + text[offset + word.len()..].find('(')?;
        let close = matching_paren(text, open)?;
        let semicolon = close + 1 + text[close + 1..].find(|c: char| !c.is_whitespace())?;
        return (bytes[semicolon] == b';').then(|| Repair::Blank(offset..semicolon + 1));
    }
    // C89's implicit int: `main () {`, `static x;`, `register i;`, where lang-c wanted a type.
    let after = text[offset + word.len()..].trim_start();
    if expected.contains(&"<typedef_name>") && !is_keyword(word) && after.starts_with(['(', ';', ',', '=', '[', ':']) {
        return Some(Repair::Insert(offset, "int "));
    }
    None
}

fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let new: String = text[range.clone()]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    if new.len() == range.len() {
        text.replace_range(range, &new);
    }
}

fn brace_depth(text: &str) -> i64 {
    tokens(text)
        .into_iter()
        .filter(|(_, t)| *t == Token::Punct)
        .map(|(r, _)| match text.as_bytes()[r.start] {
            b'{' => 1,
            b'}' => -1,
            _ => 0,
        })
        .sum()
}

fn word_at(text: &str, offset: usize) -> &str {
    let rest = &text[offset..];
    if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return "";
    }
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..len]
}

fn is_keyword(word: &str) -> bool {
    crate::model::KEYWORDS.contains(&word) || word.starts_with("__")
}
