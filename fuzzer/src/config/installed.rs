//! The compilers this machine has, from which `ccfuzz config` builds its default: every
//! `gcc-N` and `clang-N` on the `PATH` or in a `build/bin` folder made by `make` (the wrappers
//! of the Debian unstable root, GCC trunk among them as `gcc-trunk`), the exact package
//! versions of that root, and whether a clang can build binaries with the triage guard's
//! sanitizers.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The sanitizers of the triage guard: a program they flag has undefined behaviour.
pub const SANITIZER_FLAGS: [&str; 2] = [
    "-fsanitize=undefined,float-divide-by-zero,address",
    "-fno-sanitize-recover=all",
];

/// The version number of a family's development trunk (`gcc-trunk`): newer than any release.
pub const TRUNK: u32 = u32::MAX;

/// One installed version of a compiler family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// The major version, or [`TRUNK`].
    pub version: u32,
    /// How a configuration names it: `gcc-12` on the `PATH`, an absolute path in a build
    /// folder (`/…/build/bin/clang-22`).
    pub program: String,
}

/// Every installed `{family}-N`, oldest first, one per version: the `PATH`'s before the build
/// folders' (see [`build_bin_dirs`]).
pub fn versions(family: &str) -> Vec<Installed> {
    let mut found: Vec<Installed> = Vec::new();
    for (name, program) in programs_of(family) {
        let Some(version) = version_of(family, &name) else {
            continue;
        };
        if !found.iter().any(|f| f.version == version) {
            found.push(Installed { version, program });
        }
    }
    found.sort_by_key(|f| f.version);
    found
}

/// Every installed release of `family` for the version matrix of a bug, oldest first:
/// `{family}-N`, `{family}-N.M` (the unstable root's gcc-12.5 beside the host's gcc-12, taken
/// as 12.0) and `{family}-trunk` last, one program per release.
pub fn matrix_versions(family: &str) -> Vec<String> {
    let mut found: Vec<((u32, u32), String)> = Vec::new();
    for (name, program) in programs_of(family) {
        let Some(release) = release_of(family, &name) else {
            continue;
        };
        if !found.iter().any(|(known, _)| *known == release) {
            found.push((release, program));
        }
    }
    found.sort();
    found.into_iter().map(|(_, program)| program).collect()
}

/// Executables whose names start with `{family}-` as (name, program): on the `PATH` by name,
/// in the build folders by absolute path; the `PATH`'s first.
fn programs_of(family: &str) -> Vec<(String, String)> {
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).collect())
        .unwrap_or_default();
    let on_path = path_dirs.into_iter().map(|dir| (dir, false));
    let in_build = build_bin_dirs().into_iter().map(|dir| (dir, true));
    let prefix = format!("{family}-");
    let mut found = Vec::new();
    for (dir, in_build_folder) in on_path.chain(in_build) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = dir.join(&name);
            if !name.starts_with(&prefix) || !is_executable(&path) {
                continue;
            }
            let program = if in_build_folder {
                path.display().to_string()
            } else {
                name.clone()
            };
            found.push((name, program));
        }
    }
    found
}

/// Whether `program` (a name or a path) is a gcc or a clang: `gcc`, `clang-23`, `gcc-12.5`,
/// `/…/build/bin/gcc-trunk`.
pub fn is_gcc_or_clang(program: &str) -> bool {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    ["gcc", "clang"]
        .iter()
        .any(|family| name == *family || release_of(family, name).is_some())
}

/// (N, M) of a program named `{family}-N` (M = 0) or `{family}-N.M`; [`TRUNK`] for
/// `{family}-trunk`.
fn release_of(family: &str, name: &str) -> Option<(u32, u32)> {
    let suffix = name.strip_prefix(family)?.strip_prefix('-')?;
    if let Some(major) = version_of(family, name) {
        return Some((major, 0));
    }
    let (major, minor) = suffix.split_once('.')?;
    let number = |digits: &str| {
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse().ok())
            .flatten()
    };
    Some((number(major)?, number(minor)?))
}

/// `N` of a program named `{family}-N`; [`TRUNK`] for `{family}-trunk`.
fn version_of(family: &str, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(family)?.strip_prefix('-')?;
    if digits == "trunk" {
        return Some(TRUNK);
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Where `make` puts the compilers it installs outside the system (`build/bin/clang-23`):
/// `build/bin` of the current directory, then that of the workspace the running executable
/// was built in (`target/{debug,release}/ccfuzz` -> `../../build/bin`). The paths are
/// absolute: triage runs the compilers from temporary directories.
pub fn build_bin_dirs() -> Vec<PathBuf> {
    let here = Path::new("build/bin").canonicalize().ok();
    let beside_executable = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.canonicalize().ok())
        .and_then(|exe| exe.parent()?.parent()?.parent()?.join("build/bin").canonicalize().ok());
    let mut dirs: Vec<PathBuf> = here
        .into_iter()
        .chain(beside_executable)
        .filter(|dir| dir.is_dir())
        .collect();
    dirs.dedup();
    dirs
}

/// The exact package versions of each Debian unstable root beside a build folder's `bin` (the
/// compilers' root, and the RISC-V root when `make riscv-compilers` built it), with the root's
/// path; `make` writes them, one `package<TAB>version` line each.
pub fn unstable_root_versions() -> Vec<(PathBuf, String)> {
    let roots_beside = |bin: &Path| -> Vec<(PathBuf, String)> {
        let Some(build) = bin.parent() else {
            return Vec::new();
        };
        ["unstable-root", "riscv-root"]
            .iter()
            .filter_map(|name| {
                let root = build.join(name);
                let text = std::fs::read_to_string(root.join("versions")).ok()?;
                Some((root, text))
            })
            .collect()
    };
    build_bin_dirs()
        .iter()
        .map(|bin| roots_beside(bin))
        .find(|roots| !roots.is_empty())
        .unwrap_or_default()
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Whether `program` runs: a path, or a name found on the `PATH`.
pub fn which(program: &str) -> bool {
    resolve(program).is_some()
}

/// The file `program` names, through the `PATH` when it has no `/`, with symbolic links
/// followed (`gcc` is `gcc-12` on Debian).
pub fn resolve(program: &str) -> Option<std::path::PathBuf> {
    let found = if program.contains('/') {
        Some(Path::new(program).to_path_buf()).filter(|p| p.is_file())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|p| p.is_file())
        })
    }?;
    Some(found.canonicalize().unwrap_or(found))
}

/// Whether the clang `program` builds a binary with [`SANITIZER_FLAGS`] whose UBSan reports
/// a signed overflow: it needs its sanitizer runtime (Debian's `libclang-rt-N-dev`).
pub fn builds_sanitized(program: &str) -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let source = dir.path().join("probe.c");
    let binary = dir.path().join("probe");
    let text = "int main(void) { volatile int big = 2147483647; return big + 1 < 0; }\n";
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let built = Command::new(program)
        .arg("-O0")
        .args(SANITIZER_FLAGS)
        .arg("-w")
        .arg(&source)
        .arg("-o")
        .arg(&binary)
        .output()
        .is_ok_and(|out| out.status.success());
    if !built {
        log::debug!("{program} cannot build sanitized binaries");
        return false;
    }
    Command::new(&binary)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .output()
        .is_ok_and(|out| {
            !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("signed integer overflow")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_names_with_a_number_only() {
        assert_eq!(version_of("gcc", "gcc-12"), Some(12));
        assert_eq!(version_of("clang", "clang-22"), Some(22));
        assert_eq!(version_of("clang", "clang-cpp-14"), None);
        assert_eq!(version_of("gcc", "gcc-ar-12"), None);
        assert_eq!(version_of("gcc", "gcc-"), None);
        assert_eq!(version_of("gcc", "gcc"), None);
        assert_eq!(version_of("gcc", "gcc-trunk"), Some(TRUNK));
        for program in ["gcc", "clang-23", "gcc-12.5", "/x/build/bin/gcc-trunk"] {
            assert!(is_gcc_or_clang(program), "{program}");
        }
        for program in ["tcc", "pcc", "afl-clang-fast", "/x/tcc-afl/tcc", "gcc-ar"] {
            assert!(!is_gcc_or_clang(program), "{program}");
        }
        assert_eq!(version_of("gcc", "gcc-12.5"), None);
        assert_eq!(release_of("gcc", "gcc-12.5"), Some((12, 5)));
        assert_eq!(release_of("gcc", "gcc-12"), Some((12, 0)));
        assert_eq!(release_of("gcc", "gcc-trunk"), Some((TRUNK, 0)));
        assert_eq!(release_of("gcc", "gcc-ar-12"), None);
        assert_eq!(release_of("clang", "clang-cpp-14"), None);
        assert_eq!(version_of("clang", "clang++-19"), None);
    }

    #[test]
    fn versions_are_sorted_and_distinct() {
        let gccs = versions("gcc");
        assert!(!gccs.is_empty(), "gcc-12 is installed by `make deps`");
        assert!(
            gccs.windows(2).all(|pair| pair[0].version < pair[1].version),
            "{gccs:?}"
        );
    }

    #[test]
    fn the_matrix_lists_releases_oldest_first() {
        // A unit test sees the `PATH`'s compilers only: no build folder beside its executable.
        let gccs = matrix_versions("gcc");
        let at = |name: &str| {
            gccs.iter()
                .position(|p| p == name)
                .unwrap_or_else(|| panic!("{name} not in {gccs:?}"))
        };
        assert!(at("gcc-11") < at("gcc-12"), "{gccs:?}");
        let clangs = matrix_versions("clang");
        assert!(clangs.windows(2).all(|pair| pair[0] != pair[1]), "{clangs:?}");
        assert!(
            at_least_ordered(&clangs, &["clang-13", "clang-14", "clang-19"]),
            "{clangs:?}"
        );
    }

    fn at_least_ordered(programs: &[String], names: &[&str]) -> bool {
        let positions: Vec<Option<usize>> = names.iter().map(|n| programs.iter().position(|p| p == n)).collect();
        positions.iter().all(Option::is_some) && positions.windows(2).all(|pair| pair[0] < pair[1])
    }
}
