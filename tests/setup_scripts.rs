//! The set-up scripts download through the Debian archive that the machine's apt already uses (found by
//! `scripts/apt-mirror.sh`), never through a fixed host, which a site that reaches only its own mirror
//! or proxy cannot reach: no shell script names a host, and the helper picks the right entry and
//! keyring out of fixture apt configurations, or fails in one line saying what to add; and every test
//! filter of `scripts/miri.sh` still selects a test. No network.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Package archives' domains, which name a host even without a scheme (their mirrors included).
const ARCHIVE_DOMAINS: &[&str] = &["debian.org", "debian.net", "ubuntu.com", "canonical.com"];

/// Debian's own keyring, which the helper hands on when an entry names no keyring file.
const DEBIAN_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// The lines of `text` (numbered from 1) that name a host outside a comment: a URL with a scheme, or
/// an archive's domain. A trailing comment counts, so that no host hides behind a `#` mid-line.
fn host_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let lower = line.trim_start().to_ascii_lowercase();
            !lower.starts_with('#')
                && ["http://", "https://", "ftp://"]
                    .iter()
                    .chain(ARCHIVE_DOMAINS)
                    .any(|host| lower.contains(host))
        })
        .map(|(index, line)| (index + 1, line))
        .collect()
}

/// Whether `path` is a shell script: named `.sh`, or started by sh, bash or dash (directly or through
/// `env`), so that a script without the suffix (`.ci/run`) is not missed.
fn is_shell_script(path: &Path) -> bool {
    if path.extension().is_some_and(|e| e == "sh") {
        return true;
    }
    let Ok(text) = std::fs::read_to_string(path) else {
        return false;
    };
    let Some(interpreter) = text.lines().next().and_then(|l| l.strip_prefix("#!")) else {
        return false;
    };
    let mut words = interpreter.split_whitespace();
    let mut program = words.next().unwrap_or("");
    if program.ends_with("/env") {
        program = words.next().unwrap_or("");
    }
    let name = program.rsplit('/').next().unwrap_or("");
    ["sh", "bash", "dash"].contains(&name)
}

/// Every shell script under `dir`, its subfolders included.
fn shell_scripts_under(dir: &Path, scripts: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            shell_scripts_under(&path, scripts);
        } else if is_shell_script(&path) {
            scripts.push(path);
        }
    }
}

/// A site behind its own mirror or proxy cannot reach a host that a script names, so none may: every
/// shell script under `scripts/` and `.ci/run` is checked, and the offending lines are listed.
#[test]
fn no_script_names_a_host() {
    let root = support::root();
    let mut scripts = vec![root.join(".ci/run")];
    shell_scripts_under(&root.join("scripts"), &mut scripts);
    scripts.sort();
    let names: Vec<String> = scripts
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    // The check must see the scripts that download, or it proves nothing.
    for expected in [
        ".ci/run",
        "scripts/apt-mirror.sh",
        "scripts/fetch-libc-source.sh",
        "scripts/setup-debian.sh",
        "scripts/setup-gpu-toolchains.sh",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected} not scanned: {names:?}");
    }
    let mut offending = Vec::new();
    for (path, name) in scripts.iter().zip(&names) {
        let text = std::fs::read_to_string(path).unwrap();
        for (number, line) in host_lines(&text) {
            offending.push(format!("{name}:{number}: {}", line.trim()));
        }
    }
    assert!(
        offending.is_empty(),
        "scripts name a host; take the archive from scripts/apt-mirror.sh (the one apt already uses) \
         instead:\n{}",
        offending.join("\n")
    );
}

/// The scan behind [`no_script_names_a_host`] finds a host with or without a scheme, in any case,
/// and passes over comments; without this, a scan that finds nothing would pass every script.
#[test]
fn the_host_scan_finds_hosts_outside_comments() {
    let sample = "#!/bin/sh\n\
                  # Comments may name https://example.org and deb.debian.org.\n\
                  \x20 # so may indented ones: http://example.org\n\
                  deb [signed-by=$keyring] http://deb.debian.org/debian bookworm main\n\
                  apt-get update\n\
                  \x20 curl -fsSL HTTPS://Example.org/key.gpg\n\
                  echo \"add security.debian.org to apt's sources\"\n\
                  wget ftp://mirror.example/debian/README\n\
                  echo done # see archive.ubuntu.com\n\
                  echo \"$archive bookworm main\"\n";
    let found: Vec<usize> = host_lines(sample).into_iter().map(|(n, _)| n).collect();
    assert_eq!(found, [4, 6, 7, 8, 9], "{sample}");
}

/// Runs `scripts/apt-mirror.sh` on an apt configuration directory made afresh (under the scratch
/// space) with `files` (path under it, contents): whether it succeeded, its stdout and its stderr.
fn find_archive(case: &str, files: &[(&str, &str)]) -> (bool, String, String) {
    let etc = apt_etc(case, files);
    let out = Command::new("sh")
        .arg(support::root().join("scripts/apt-mirror.sh"))
        .env("OMPRPC_APT_ETC", &etc)
        .output()
        .expect("sh");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// An apt configuration directory for `case` holding only `files`, so that no earlier run's file
/// can take part.
fn apt_etc(case: &str, files: &[(&str, &str)]) -> PathBuf {
    let etc = support::scratch().join("apt-mirror").join(case);
    let _ = std::fs::remove_dir_all(&etc);
    std::fs::create_dir_all(etc.join("sources.list.d")).unwrap();
    for (name, text) in files {
        std::fs::write(etc.join(name), text).unwrap();
    }
    etc
}

/// The URI and keyring that the helper prints for `files`; fails the test when it fails.
fn found(case: &str, files: &[(&str, &str)]) -> (String, String) {
    let (ok, stdout, stderr) = find_archive(case, files);
    assert!(ok, "{case}: the helper failed: {stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{case}: a URI and a keyring: {stdout:?}");
    (lines[0].to_owned(), lines[1].to_owned())
}

/// The layout of a stock Debian 12 image (deb822), made harder: a disabled stanza and a security
/// stanza come first, field names in any case, comments and a value continued on the next line; the
/// stanza for bookworm (beside bookworm-updates) is the one taken, with its Signed-By file.
#[test]
fn deb822_takes_the_first_enabled_bookworm_main_stanza() {
    let sources = "\
# The site's old mirror, switched off: it must not be taken.
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/security.gpg

types: deb
# snapshot of 2025-05-20
uris: http://mirror.example/debian
SUITES: bookworm bookworm-updates
Components: contrib
 main non-free-firmware
signed-by: /etc/apt/keyrings/site-debian.gpg

Types: deb
URIs: http://later.example/debian
Suites: bookworm
Components: main
";
    assert_eq!(
        found("deb822", &[("sources.list.d/debian.sources", sources)]),
        (
            "http://mirror.example/debian".into(),
            "/etc/apt/keyrings/site-debian.gpg".into()
        )
    );
}

/// One-line entries: comments (whole-line and trailing) and the security suite are passed over, and
/// the options in brackets give the keyring.
#[test]
fn a_one_line_entry_gives_its_uri_and_signed_by() {
    let list = "\
# deb http://commented.example/debian bookworm main
deb [arch=amd64] http://mirror.example/debian-security bookworm-security main
deb [arch=amd64 signed-by=/x.gpg] http://proxy.example:3142/debian bookworm main contrib # the site's proxy
deb http://later.example/debian bookworm main
";
    assert_eq!(
        found("one-line", &[("sources.list.d/site.list", list)]),
        ("http://proxy.example:3142/debian".into(), "/x.gpg".into())
    );
}

/// apt's mirror method (a file listing mirrors) is handed on as written, with Debian's keyring when
/// the entry names none; so is an entry in `sources.list`, which apt reads before its parts.
#[test]
fn any_scheme_is_handed_on_as_written() {
    let sources = "\
Types: deb
URIs: mirror+file:/etc/apt/mirrors/debian.list
Suites: bookworm bookworm-updates
Components: main
";
    assert_eq!(
        found("mirror-file", &[("sources.list.d/debian.sources", sources)]),
        ("mirror+file:/etc/apt/mirrors/debian.list".into(), DEBIAN_KEYRING.into())
    );
    assert_eq!(
        found(
            "sources-list-first",
            &[
                ("sources.list", "deb file:/srv/debian bookworm main\n"),
                ("sources.list.d/debian.sources", sources),
            ]
        ),
        ("file:/srv/debian".into(), DEBIAN_KEYRING.into())
    );
}

/// Other vendors' repositories come first in name order here, one with "bookworm" inside its suite's
/// name; files apt does not read (a `.save` suffix) are not read either.
#[test]
fn other_vendors_and_unread_files_are_passed_over() {
    let vendor = "\
Types: deb
URIs: https://vendor.example/node_20.x
Suites: nodistro
Components: main
Architectures: amd64
Signed-By: /usr/share/keyrings/nodesource.gpg
";
    let debian = "\
Types: deb
URIs: https://mirror.example/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
";
    let files = [
        ("sources.list.d/00-vendor.sources", vendor),
        (
            "sources.list.d/01-cloud.list",
            "deb https://cloud.example/apt cloud-sdk-bookworm main\n",
        ),
        (
            "sources.list.d/02-old.list.save",
            "deb http://unread.example/debian bookworm main\n",
        ),
        ("sources.list.d/debian.sources", debian),
    ];
    assert_eq!(
        found("vendors", &files),
        ("https://mirror.example/debian".into(), DEBIAN_KEYRING.into())
    );
}

/// A deb entry wins over a deb-src one listed before it; with deb-src entries alone, the first is
/// taken (the archive serves both). A key given inline, not as a file, leaves Debian's keyring.
#[test]
fn deb_is_preferred_and_deb_src_serves_alone() {
    let both = "\
deb-src [signed-by=/src.gpg] http://src.example/debian bookworm main
deb http://bin.example/debian bookworm main
";
    assert_eq!(
        found("deb-over-deb-src", &[("sources.list", both)]),
        ("http://bin.example/debian".into(), DEBIAN_KEYRING.into())
    );
    let inline_key = "\
Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mDMEZ0000000000000000000000000000000000000000000000000000
 -----END PGP PUBLIC KEY BLOCK-----
";
    assert_eq!(
        found("deb-src-inline-key", &[("sources.list.d/src.sources", inline_key)]),
        ("http://src.example/debian".into(), DEBIAN_KEYRING.into())
    );
}

/// Sources without an enabled Debian 12 main entry make the helper fail in one line that says what
/// it looked for, where, and what to add, naming no host (not even those in the sources).
#[test]
fn without_a_bookworm_main_entry_it_fails_saying_what_to_add() {
    let list = "\
# deb http://commented.example/debian bookworm main
deb http://old.example/debian bullseye main
deb http://mirror.example/debian-security bookworm-security main
deb http://mirror.example/debian bookworm-updates main
deb http://mirror.example/debian bookworm contrib non-free # no main
deb cdrom:[Debian GNU/Linux 12.5.0 _Bookworm_ - Official amd64 DVD Binary-1]/ bookworm main
deb https://cloud.example/apt cloud-sdk-bookworm main
";
    let disabled = "\
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no
";
    let files = [
        ("sources.list", list),
        ("sources.list.d/debian.sources", disabled),
        (
            "sources.list.d/debian.list.disabled",
            "deb http://unread.example/debian bookworm main\n",
        ),
    ];
    for (case, files) in [("none", &files[..]), ("empty", &[][..])] {
        let (ok, stdout, stderr) = find_archive(case, files);
        let etc = support::scratch().join("apt-mirror").join(case);
        assert!(!ok, "{case}: {stdout}");
        assert_eq!(stdout, "", "{case}");
        assert_eq!(stderr.lines().count(), 1, "{case}: one line: {stderr}");
        for words in [
            "omprpc setup: ",
            "suite bookworm with component main",
            &format!("{}/sources.list.d/", etc.display()),
            "add the Debian 12 archive your machine uses to apt's sources",
        ] {
            assert!(stderr.contains(words), "{case}: {words:?} not in: {stderr}");
        }
        assert!(stderr.starts_with("omprpc setup: "), "{case}: {stderr}");
        assert_eq!(host_lines(&stderr), [], "{case}: names a host: {stderr}");
        assert!(!stderr.contains("example"), "{case}: names a host: {stderr}");
    }
}

/// The source fetch asks the helper before it downloads anything: with no Debian 12 archive in apt's
/// sources it stops with the helper's line and leaves no private apt configuration behind.
#[test]
fn the_source_fetch_stops_with_the_helpers_line() {
    let etc = apt_etc(
        "fetch-none",
        &[("sources.list", "deb http://old.example/debian bullseye main\n")],
    );
    let cache = support::scratch().join("apt-mirror/fetch-cache");
    let _ = std::fs::remove_dir_all(&cache);
    let out = Command::new("sh")
        .arg(support::root().join("scripts/fetch-libc-source.sh"))
        .env("OMPRPC_APT_ETC", &etc)
        .env("OMPRPC_CACHE", &cache)
        .output()
        .expect("sh");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.starts_with("omprpc setup: found no Debian 12 archive in apt's sources"),
        "{stderr}"
    );
    assert!(
        !cache.join("apt-src").exists(),
        "nothing set up before the archive is known"
    );
}

/// Every test filter of `scripts/miri.sh` still selects a test: a module renamed or moved would
/// otherwise drop out of the Miri run without a word (as the mailbox once did). CI cannot run Miri;
/// it runs this.
#[test]
fn every_miri_filter_selects_a_test() {
    let out = Command::new("sh")
        .arg(support::root().join("scripts/miri.sh"))
        .arg("--check-filters")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "omprpc miri: every filter matches a test\n"
    );
}
