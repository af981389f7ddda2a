//! The paths a Rust source file names, read without a parser: its tokens with comments, strings
//! and character literals dropped, then every `use` tree expanded into full paths and every
//! other `a::b::c` path, each with its line and the inline module it stands in.

/// One token of code: an identifier or keyword, or one punctuation character (`::` is one token).
#[derive(Clone, Debug, PartialEq)]
pub enum Token {
    Word(String),
    PathSep,
    Punct(char),
}

/// Tokens with their lines. Comments (doc comments included), string and character literals
/// and numbers are dropped: a path inside them is not an import.
pub fn tokens(source: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' || ((c == 'r' || c == 'b') && starts_string(&chars, i)) {
            i = skip_string(&chars, i, &mut line);
        } else if c == '\'' {
            i = skip_char_or_lifetime(&chars, i);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if !c.is_ascii_digit() {
                out.push((Token::Word(chars[start..i].iter().collect()), line));
            }
        } else if c == ':' && at(i + 1) == ':' {
            out.push((Token::PathSep, line));
            i += 2;
        } else {
            out.push((Token::Punct(c), line));
            i += 1;
        }
    }
    out
}

/// Whether a string literal with a prefix (`r"`, `r#"`, `b"`, `br"`) starts at `i`.
fn starts_string(chars: &[char], i: usize) -> bool {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') {
        return false;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) == Some(&'r') {
        j += 1;
        while chars.get(j) == Some(&'#') {
            j += 1;
        }
    }
    j > i && chars.get(j) == Some(&'"')
}

/// The index after the string literal starting at `i` (prefix included).
fn skip_string(chars: &[char], mut i: usize, line: &mut usize) -> usize {
    let mut raw = false;
    let mut hashes = 0;
    while chars[i] != '"' {
        raw |= chars[i] == 'r';
        hashes += usize::from(chars[i] == '#');
        i += 1;
    }
    i += 1;
    while i < chars.len() {
        match chars[i] {
            '\\' if !raw => i += 2,
            '"' if (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) => return i + 1 + hashes,
            c => {
                *line += usize::from(c == '\n');
                i += 1;
            }
        }
    }
    i
}

/// The index after a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime's quote.
fn skip_char_or_lifetime(chars: &[char], i: usize) -> usize {
    if chars.get(i + 1) == Some(&'\\') {
        let mut j = i + 2;
        while j < chars.len() && chars[j] != '\'' {
            j += 1;
        }
        return j + 1;
    }
    if chars.get(i + 2) == Some(&'\'') {
        return i + 3;
    }
    i + 1
}

/// A path named in a file.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedPath {
    pub segments: Vec<String>,
    /// The inline modules (`mod tests { … }`) it stands in, outermost first.
    pub inline: Vec<String>,
    pub line: usize,
    /// For a `use`: the name it brings into scope (`None` for a glob).
    pub imported_as: Option<String>,
}

/// What a file names: its `use` trees expanded, the other paths of two or more segments, and the
/// modules it declares as files (`mod name;`).
#[derive(Debug, Default)]
pub struct FilePaths {
    pub uses: Vec<NamedPath>,
    pub paths: Vec<NamedPath>,
    pub declared_modules: Vec<String>,
}

pub fn file_paths(source: &str) -> FilePaths {
    let tokens = tokens(source);
    let word = |i: usize| match tokens.get(i) {
        Some((Token::Word(w), _)) => Some(w.as_str()),
        _ => None,
    };
    let mut found = FilePaths::default();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let line = tokens[i].1;
        match &tokens[i].0 {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|(_, open)| *open == depth) {
                    inline.pop();
                }
            }
            Token::Word(w) if w == "mod" => {
                if let Some(name) = word(i + 1) {
                    match tokens.get(i + 2).map(|t| &t.0) {
                        Some(Token::Punct(';')) if inline.is_empty() => found.declared_modules.push(name.to_string()),
                        Some(Token::Punct('{')) => {
                            inline.push((name.to_string(), depth));
                            depth += 1;
                            i += 3;
                            continue;
                        }
                        _ => {}
                    }
                }
            }
            Token::Word(w) if w == "use" => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j].0 == Token::Punct(';'))
                    .unwrap_or(tokens.len());
                let names: Vec<String> = inline.iter().map(|(n, _)| n.clone()).collect();
                let mut leaves = Vec::new();
                use_tree(&tokens[i + 1..end], &[], &mut leaves);
                for (segments, imported_as) in leaves {
                    found.uses.push(NamedPath {
                        segments,
                        inline: names.clone(),
                        line,
                        imported_as,
                    });
                }
                i = end + 1;
                continue;
            }
            Token::Word(first) if tokens.get(i + 1).map(|t| &t.0) == Some(&Token::PathSep) => {
                let preceded_by_sep = i > 0 && tokens[i - 1].0 == Token::PathSep;
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j).map(|t| &t.0) == Some(&Token::PathSep) {
                    match word(j + 1) {
                        Some(w) => segments.push(w.to_string()),
                        None => break,
                    }
                    j += 2;
                }
                if !preceded_by_sep && segments.len() > 1 {
                    let names = inline.iter().map(|(n, _)| n.clone()).collect();
                    found.paths.push(NamedPath {
                        segments,
                        inline: names,
                        line,
                        imported_as: None,
                    });
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Expands one `use` tree (between `use` and `;`) into its leaves: the full path and the name it
/// brings into scope. `{a, b::c}` groups nest, `self` names the group's prefix, `*` is a glob.
fn use_tree(tree: &[(Token, usize)], prefix: &[String], leaves: &mut Vec<(Vec<String>, Option<String>)>) {
    let mut path = prefix.to_vec();
    let mut i = 0;
    while i < tree.len() {
        match &tree[i].0 {
            Token::Word(w) if w == "as" => {
                if let Some((Token::Word(alias), _)) = tree.get(i + 1) {
                    leaves.push((path, Some(alias.clone())));
                }
                return;
            }
            // `{self, …}` names the group's prefix itself.
            Token::Word(w) if w == "self" && i == 0 && !prefix.is_empty() => i += 1,
            Token::Word(w) => {
                path.push(w.clone());
                i += 1;
            }
            Token::Punct('*') => {
                leaves.push((path, None));
                return;
            }
            Token::Punct('{') => {
                let mut depth = 0;
                let mut start = i + 1;
                for j in i..tree.len() {
                    match tree[j].0 {
                        Token::Punct('{') => depth += 1,
                        Token::Punct('}') | Token::Punct(',') if depth == 1 => {
                            if j > start {
                                use_tree(&tree[start..j], &path, leaves);
                            }
                            start = j + 1;
                            if tree[j].0 == Token::Punct('}') {
                                return;
                            }
                        }
                        Token::Punct('}') => depth -= 1,
                        _ => {}
                    }
                }
                return;
            }
            _ => i += 1,
        }
    }
    if let Some(name) = path.last().cloned() {
        leaves.push((path, Some(name)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segments(paths: &[NamedPath]) -> Vec<String> {
        paths.iter().map(|p| p.segments.join("::")).collect()
    }

    #[test]
    fn a_use_tree_expands_into_full_paths_with_the_names_they_bring() {
        let found = file_paths("pub use crate::a::{b::{C, D as E}, self, f::*};\nuse x::Y;");
        let names: Vec<_> = found
            .uses
            .iter()
            .map(|u| (u.segments.join("::"), u.imported_as.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("crate::a::b::C".to_string(), Some("C".to_string())),
                ("crate::a::b::D".to_string(), Some("E".to_string())),
                ("crate::a".to_string(), Some("a".to_string())),
                ("crate::a::f".to_string(), None),
                ("x::Y".to_string(), Some("Y".to_string())),
            ]
        );
    }

    #[test]
    fn comments_strings_and_characters_name_no_path() {
        let source = "//! see crate::a::b\n/* crate::c::d /* nested */ crate::e::f */\n\
                      let s = \"crate::g::h\"; let r = r#\"crate::i::j\"#; let c = '\"'; let q = '\\'';\n\
                      fn f<'a>(x: &'a str) { crate::k::l(x) }";
        assert_eq!(segments(&file_paths(source).paths), ["crate::k::l"]);
    }

    #[test]
    fn paths_know_their_line_and_inline_module() {
        let source = "mod child;\nfn f() { crate::a::g(); }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { crate::b::h(); }\n}\nfn after() { crate::c::i(); }";
        let found = file_paths(source);
        assert_eq!(found.declared_modules, ["child"]);
        let where_: Vec<_> = found
            .paths
            .iter()
            .map(|p| (p.segments[1].clone(), p.line, p.inline.clone()))
            .collect();
        assert_eq!(
            where_,
            [
                ("a".to_string(), 2, vec![]),
                ("b".to_string(), 6, vec!["tests".to_string()]),
                ("c".to_string(), 8, vec![])
            ]
        );
        assert_eq!(found.uses[0].inline, ["tests"]);
    }
}
