//! The layout of `src/rpc` keeps its promises: its modules use each other in one direction only, so
//! that a reader can follow a host call from the mailbox up to the handler without meeting a module
//! that leads back; and the rest of the crate meets host services through their front door
//! (`rpc::HostServices` and the handles it speaks in) only. Production code only: a module's tests
//! may use anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, with its module path (`rpc::serving::server`; `mod.rs` is its folder).
fn modules(dir: &Path, path: &str, out: &mut BTreeMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let file = entry.unwrap().path();
        let name = file.file_stem().unwrap().to_str().unwrap().to_string();
        if file.is_dir() {
            modules(&file, &format!("{path}::{name}"), out);
        } else if file.extension().is_some_and(|e| e == "rs") {
            let module = if name == "mod" {
                path.to_string()
            } else {
                format!("{path}::{name}")
            };
            out.insert(module, file);
        }
    }
}

/// Whether `line` is an attribute that keeps the next item out of the shipped library:
/// `#[cfg(test)]`, `#[cfg(all(test, …))]`, `#[cfg(any(test, feature = "test-doubles"))]`.
fn test_only(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("#[cfg(")
        && !line.contains("not(")
        && (line.contains("(test") || line.contains(" test,") || line.contains("test-doubles"))
}

/// The source without its test-only items (a test module, a test-only function).
fn production_code(source: &str) -> String {
    let mut out = String::new();
    let mut lines = source.lines();
    while let Some(line) = lines.next() {
        if test_only(line) {
            // Skip the item that follows: to the end of its braces, or its `;`.
            let mut depth = 0i32;
            let mut opened = false;
            for item in lines.by_ref() {
                depth += item.matches('{').count() as i32 - item.matches('}').count() as i32;
                opened |= item.contains('{');
                if (opened && depth <= 0) || (!opened && item.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// The module paths `code` of module `me` names: `crate::rpc::…`, `super::…` (resolved), with
/// `{a, b}` groups expanded.
fn referenced(code: &str, me: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut start = 0;
    while let Some(at) = code[start..].find(['c', 's']).map(|i| i + start) {
        start = at + 1;
        let rest = &code[at..];
        let before_ok = at == 0 || !code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        if !before_ok {
            continue;
        }
        let (base, tail) = if let Some(tail) = rest.strip_prefix("crate::") {
            (String::from(""), tail)
        } else if rest.starts_with("super::") {
            // Each `super` is the parent of the module before it.
            let mut parts: Vec<&str> = me.split("::").collect();
            let mut tail = rest;
            while let Some(t) = tail.strip_prefix("super::") {
                parts.pop();
                tail = t;
            }
            (parts.join("::"), tail)
        } else {
            continue;
        };
        for path in expand(tail) {
            let full = if base.is_empty() {
                path
            } else {
                format!("{base}::{path}")
            };
            found.insert(full);
        }
    }
    found
}

/// `a::b::{c, d::e}` → `a::b::c`, `a::b::d::e`; stops at the first character outside a path.
fn expand(tail: &str) -> Vec<String> {
    let mut path = String::new();
    for (i, c) in tail.char_indices() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            path.push(c);
        } else if c == '{' && path.ends_with("::") {
            let inner_end = matching_brace(&tail[i..]).map(|e| e + i).unwrap_or(tail.len());
            let inner = &tail[i + 1..inner_end];
            return split_top_level(inner)
                .into_iter()
                .flat_map(|part| {
                    expand(part.trim())
                        .into_iter()
                        .map(|p| format!("{path}{p}"))
                        .collect::<Vec<_>>()
                })
                .collect();
        } else {
            break;
        }
    }
    vec![path.trim_end_matches(':').to_string()]
}

fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut from) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[from..]);
    parts
}

/// The module of `modules` that `path` lies in (its longest prefix that is one), if any.
fn module_of<'a>(path: &str, modules: &'a BTreeMap<String, PathBuf>) -> Option<&'a String> {
    let mut candidate = path.to_string();
    loop {
        if let Some((name, _)) = modules.get_key_value(&candidate) {
            return Some(name);
        }
        candidate = candidate.rsplit_once("::")?.0.to_string();
    }
}

/// Which modules of `src/rpc` each one uses.
fn rpc_graph() -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rpc");
    let mut files = BTreeMap::new();
    modules(&root, "rpc", &mut files);
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        let is_folder = file.file_name().is_some_and(|n| n == "mod.rs");
        let mut uses = BTreeSet::new();
        for path in referenced(&code, module) {
            if let Some(target) = module_of(&path, &files) {
                // A folder's declarations of its own modules are not uses.
                let declared = is_folder && target.starts_with(&format!("{module}::"));
                if target != module && !declared {
                    uses.insert(target.clone());
                }
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// A cycle of `graph`, if it has one.
fn a_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(cycle) = visit(next, graph, state, stack) {
                        return Some(cycle);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(cycle) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn the_rpc_modules_use_each_other_in_one_direction() {
    let graph = rpc_graph();
    assert!(graph.len() > 15, "the modules of src/rpc: {:?}", graph.keys());
    let mut all = Vec::new();
    let mut remaining = graph.clone();
    while let Some(cycle) = a_cycle(&remaining) {
        // Report every circle: drop one edge of this one and look again.
        remaining.get_mut(&cycle[0]).unwrap().remove(&cycle[1]);
        all.push(cycle.join(" -> "));
    }
    assert!(all.is_empty(), "import circles in src/rpc:\n{}", all.join("\n"));
}

#[test]
fn the_checker_finds_a_circle_and_resolves_paths() {
    let code = "use super::server::RpcServer;\nuse crate::rpc::{protocol::ffi, serving::{registry, threads}};";
    let found = referenced(code, "rpc::serving::calls");
    let want: BTreeSet<String> = [
        "rpc::serving::server::RpcServer",
        "rpc::protocol::ffi",
        "rpc::serving::registry",
        "rpc::serving::threads",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(found, want);
    let shipped = production_code(
        "fn a() {}\n#[cfg(all(test, feature = \"rpc\"))]\nmod tests {\n    use super::x;\n}\n#[cfg(not(test))]\nfn b() {}\n",
    );
    assert!(!shipped.contains("super::x") && shipped.contains("fn b()"), "{shipped}");
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".to_string(), ["b".to_string()].into()),
        ("b".to_string(), ["c".to_string()].into()),
        ("c".to_string(), ["a".to_string()].into()),
    ]
    .into();
    assert_eq!(a_cycle(&graph).map(|c| c.len()), Some(4));
}

/// What the rest of the crate may name of `src/rpc`: its front door (`rpc/host_services.rs`) and the
/// few types it is spoken in. Anything else is a reach past the door.
const FRONT_DOOR: [&str; 10] = [
    "rpc::HostServices",
    "rpc::ImageServer",
    "rpc::DeviceHeap",
    "rpc::TracedKernel",
    "rpc::DeviceMemory",
    "rpc::CLIENT_SYMBOL",
    "rpc::AVAILABLE",
    "rpc::Packet",
    "rpc::Port",
    "rpc::UserHandler",
];

/// The paths into `rpc` that production code outside it names, and where, when they are not the
/// front door's.
fn reaches_past_the_front_door(files: &BTreeMap<String, PathBuf>) -> Vec<String> {
    let mut found = Vec::new();
    for (module, file) in files {
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        for path in referenced(&code, module) {
            let through_the_door = FRONT_DOOR
                .iter()
                .any(|door| path == *door || path.starts_with(&format!("{door}::")));
            if path.starts_with("rpc::") && !through_the_door {
                found.push(format!("{} names {path}", file.display()));
            }
        }
    }
    found
}

/// The core, the ABI layer and the backends meet host services through the front door only (tests
/// and test doubles may use anything).
#[test]
fn the_rest_of_the_crate_uses_host_services_through_the_front_door() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    for folder in ["plugin", "abi", "backend", "util"] {
        modules(&src.join(folder), folder, &mut files);
    }
    // Test modules in files of their own, and the backends' test doubles (feature test-doubles).
    files.retain(|module, _| {
        !module.ends_with("::tests")
            && !module.ends_with("::simulated")
            && !module.ends_with("::harness")
            && !module.contains("::suite")
    });
    assert!(files.len() > 40, "{:?}", files.keys());
    let reaches = reaches_past_the_front_door(&files);
    assert!(reaches.is_empty(), "{}", reaches.join("\n"));

    // The check sees a reach, grouped or not.
    let sample = std::env::temp_dir().join(format!("omprpc-layout-{}.rs", std::process::id()));
    std::fs::write(
        &sample,
        "use crate::rpc::{HostServices, serving::registry};\nfn f() { crate::rpc::protocol::ffi::x(); }\n",
    )
    .unwrap();
    let reaches = reaches_past_the_front_door(&[("plugin::sample".to_string(), sample.clone())].into());
    let _ = std::fs::remove_file(&sample);
    assert_eq!(reaches.len(), 2, "{reaches:?}");
}
