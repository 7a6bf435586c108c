//! Every c_tests program with an expected output (the host-services ones included) under valgrind's
//! memcheck with omprpc as libomptarget 16's host plugin: it must print its expected output and
//! valgrind must report no error (invalid access, use of uninitialised memory, definite leak). The
//! only suppression (tests/valgrind.supp) is a leak of libomptarget 16 itself, explained there.
//!
//! valgrind options: `--fair-sched=yes`, because device threads spin-wait for the serving thread and
//! valgrind's default scheduler starves spinning threads (two programs needed minutes without it);
//! `--max-stackframe`, because c_tests/nowait_big_stack.c's region has a 3 MiB frame, which valgrind
//! otherwise takes for a switch of stacks.

mod support;

use std::process::Command;
use std::sync::Mutex;
use std::time::Duration;

use support::{build_program, host_plugin_dir, root, run_with_limit};

fn programs() -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(root().join("c_tests")).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        let expected = path.with_extension("expected");
        if (ext == "c" || ext == "cpp") && expected.exists() {
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            found.push((file, std::fs::read_to_string(expected).unwrap()));
        }
    }
    found.sort();
    found
}

fn check(file: &str, expected: &str) -> Result<(), String> {
    let exe = build_program(file);
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--error-exitcode=99",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite",
        "--show-leak-kinds=definite",
        "--fair-sched=yes",
        "--max-stackframe=16777216",
        "--num-callers=40",
    ])
    .arg(format!(
        "--suppressions={}",
        root().join("tests/valgrind.supp").display()
    ))
    .arg(&exe)
    .env("LD_LIBRARY_PATH", host_plugin_dir())
    .current_dir(support::scratch());
    let out = run_with_limit(cmd, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stderr
        .lines()
        .find(|l| l.contains("ERROR SUMMARY"))
        .unwrap_or("no error summary")
        .to_string();
    if !out.status.success() {
        return Err(format!("exit {:?}, {summary}\n{stderr}", out.status.code()));
    }
    if stdout != expected {
        return Err(format!("stdout:\n{stdout}\nexpected:\n{expected}"));
    }
    println!("ok {file}: {summary}");
    Ok(())
}

#[test]
fn c_programs_are_clean_under_memcheck() {
    support::require_toolchain();
    if Command::new("valgrind").arg("--version").output().is_err() {
        panic!("valgrind is not installed; run: {}", support::SETUP);
    }
    let programs = programs();
    assert!(programs.len() >= 10, "found {} programs", programs.len());
    // Two programs at a time: valgrind runs each on one core.
    let queue = Mutex::new(programs.iter());
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some((file, expected)) = queue.lock().unwrap().next() else {
                    return;
                };
                if let Err(why) = check(file, expected) {
                    failures.lock().unwrap().push(format!("{file}: {why}"));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
