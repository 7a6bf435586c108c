//! Every C/C++ program in `c_tests/` that has a `.expected` file, built by clang-16 and run through
//! Debian's libomptarget 16: with our plugin its stdout must equal the expected output, equal the stock
//! plugin's output, our plugin (and no stock host plugin) must be the one mapped, and it must be silent
//! on stderr, or print exactly the lines of the program's `.stderr` file there, where one is given
//! (addresses written `0x_`, as they differ from run to run). Programs named `rpc_*` use host services, which only omprpc serves (under the stock
//! plugin the device-side client falls back to direct calls and says so), so they are not compared
//! with the stock plugin.

mod support;

use support::{build_program, check_ours_ran, check_stock_ran, other_stderr, run_text, Plugin};

fn programs() -> Vec<(String, String)> {
    let dir = support::root().join("c_tests");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "c" && ext != "cpp" {
            continue;
        }
        let expected = path.with_extension("expected");
        if expected.exists() {
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            found.push((file, std::fs::read_to_string(expected).unwrap()));
        }
    }
    found.sort();
    found
}

fn check(file: &str, expected: &str) -> Result<(), String> {
    let exe = build_program(file);
    let ours = run_text(&exe, &[], Plugin::Ours, &[]);
    let (ours_out, ours_err) = (&ours.stdout, &ours.stderr);
    if !ours.status.success() {
        return Err(format!(
            "exited with {} under our plugin; stderr:\n{ours_err}",
            ours.status
        ));
    }
    check_ours_ran(ours_err)?;
    if ours_out != expected {
        return Err(format!("stdout under our plugin:\n{ours_out}\nexpected:\n{expected}"));
    }
    let noise = support::mask_addresses(&other_stderr(ours_err));
    let expected_stderr = support::root().join("c_tests").join(file).with_extension("stderr");
    let expected_noise = std::fs::read_to_string(&expected_stderr).unwrap_or_default();
    if noise != expected_noise {
        return Err(format!(
            "stderr under our plugin (addresses masked):\n{noise}\nexpected (from {}):\n{expected_noise}",
            expected_stderr.display()
        ));
    }
    if file.starts_with("rpc_") {
        return Ok(());
    }
    let stock = run_text(&exe, &[], Plugin::Stock, &[]);
    let (stock_out, stock_err) = (&stock.stdout, &stock.stderr);
    check_stock_ran(stock_err)?;
    if stock_out != ours_out {
        return Err(format!(
            "stdout differs from the stock plugin's:\nours:\n{ours_out}\nstock:\n{stock_out}"
        ));
    }
    Ok(())
}

#[test]
fn addresses_are_masked() {
    assert_eq!(
        support::mask_addresses("free(0x7f00a1) and 0x12345670, 0x, 0xg\n"),
        "free(0x_) and 0x_, 0x, 0xg\n"
    );
}

#[test]
fn c_programs_match_expected_and_stock_output() {
    support::require_toolchain();
    let programs = programs();
    assert!(
        programs.len() >= 10,
        "expected the c_tests programs, found {}",
        programs.len()
    );
    let mut failures = Vec::new();
    for (file, expected) in &programs {
        match check(file, expected) {
            Ok(()) => println!("ok {file}"),
            Err(why) => {
                println!("FAIL {file}");
                failures.push(format!("{file}: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} programs failed:\n{}",
        failures.len(),
        programs.len(),
        failures.join("\n\n")
    );
}
