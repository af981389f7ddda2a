//! The variant's source file of an executor, written over in place from the first byte where the
//! new text differs from the one written last, through a descriptor kept open.
//!
//! A chain's proposal differs from the text that ran before it in a statement or a few, so most
//! of a text is already in the file. Against tcc, writing each variant whole through a freshly
//! opened file was a thirtieth of the client's CPU, a fifth of that in the `open` and `close`.
//! The file is never truncated to nothing and written again: ext4 writes such a file back to
//! the disk when it is closed (`auto_da_alloc`, against losing a file replaced that way), which
//! with `std::fs::write` was a tenth of the client's CPU.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub struct SourceFile {
    path: PathBuf,
    /// The open file and the text it holds; none before the first write, after a failed one and
    /// once the file may have gone with its directory.
    written: Option<(File, Vec<u8>)>,
}

impl SourceFile {
    pub fn new(path: PathBuf) -> Self {
        SourceFile { path, written: None }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes the file hold exactly `text`.
    pub fn write(&mut self, text: &[u8]) -> io::Result<()> {
        let (file, mut held, known) = match self.written.take() {
            Some((file, held)) => (file, held, true),
            // What an earlier execution or process left there is unknown: written whole.
            None => {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&self.path)?;
                (file, Vec::new(), false)
            }
        };
        let from = common_prefix(&held, text);
        file.write_all_at(&text[from..], from as u64)?;
        if !known || text.len() < held.len() {
            file.set_len(text.len() as u64)?;
        }
        held.truncate(from);
        held.extend_from_slice(&text[from..]);
        self.written = Some((file, held));
        Ok(())
    }

    /// The file's directory was removed: the next write creates the file again.
    pub fn forget(&mut self) {
        self.written = None;
    }
}

/// The length of the longest common prefix of `a` and `b`, compared a block at a time (slice
/// equality is a `memcmp`; with 256-byte blocks the calls cost a third of the write).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + BLOCK <= len && a[at..at + BLOCK] == b[at..at + BLOCK] {
        at += BLOCK;
    }
    at + a[at..len].iter().zip(&b[at..len]).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_holds_exactly_each_text_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("variant.c");
        std::fs::write(&path, "left by an earlier process, longer than anything written here").unwrap();
        let mut source = SourceFile::new(path.clone());
        let long: String = (0..2000).map(|i| format!("int v{i};\n")).collect();
        let texts = [
            "int main(void) { return 12345; }\n".to_string(),
            "int main(void) { return 0; }\n".to_string(),
            "int x;\nint main(void) { return x; }\n".to_string(),
            long.clone(),
            // Differs past the first blocks, then only in its last byte, then grows by one
            // byte, then is a prefix.
            long.replace("int v900;", "long v900;"),
            {
                let mut last_changed = long.replace("int v900;", "long v900;");
                last_changed.pop();
                last_changed.push('x');
                last_changed
            },
            long.replace("int v900;", "long v900;") + "x",
            long[..5000].to_string(),
            long[..5000].to_string(),
            String::new(),
            "int main(void) { return 1; }\n".to_string(),
        ];
        for text in &texts {
            source.write(text.as_bytes()).unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), *text);
        }
        // Removed behind its back (its directory emptied whole): forgotten, it is created again.
        std::fs::remove_file(&path).unwrap();
        source.forget();
        source.write(b"int main(void) { return 2; }\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"int main(void) { return 2; }\n");
    }

    #[test]
    fn common_prefixes_are_found_across_blocks() {
        let a = vec![7u8; 10_000];
        for at in [0, 1, 4095, 4096, 4097, 8191, 9999] {
            let mut b = a.clone();
            b[at] = 8;
            assert_eq!(common_prefix(&a, &b), at);
        }
        assert_eq!(common_prefix(&a, &a[..6000]), 6000);
        assert_eq!(common_prefix(&a, &[]), 0);
    }
}
