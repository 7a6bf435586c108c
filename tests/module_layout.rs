//! The layout of the library keeps its promises: no import circle between its files or its folders
//! ([`the_whole_library_has_no_import_circle`]). The layout of `src/rpc` keeps its promises: its modules use each other in one direction only, so
//! that a reader can follow a host call from the mailbox up to the handler without meeting a module
//! that leads back, and its folders are layers that only point down ([`RPC_LAYERS`]); and the rest of the crate meets host services through their front door
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

/// The module paths `code` of module `me` names: `crate::…`, `super::…` and `self::…` (resolved),
/// and paths that start with one of `children`, the modules declared in `me`'s own folder (a
/// `mod.rs` naming its children), with `{a, b}` groups expanded.
fn referenced(code: &str, me: &str, children: &BTreeSet<String>) -> BTreeSet<String> {
    let bytes = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = BTreeSet::new();
    for at in 0..bytes.len() {
        if !ident(bytes[at]) || (at > 0 && (ident(bytes[at - 1]) || bytes[at - 1] == b':')) {
            continue;
        }
        let rest = &code[at..];
        let (base, tail) = if let Some(tail) = rest.strip_prefix("crate::") {
            (String::new(), tail)
        } else if rest.starts_with("super::") {
            // Each `super` is the parent of the module before it.
            let mut parts: Vec<&str> = me.split("::").collect();
            let mut tail = rest;
            while let Some(t) = tail.strip_prefix("super::") {
                parts.pop();
                tail = t;
            }
            (parts.join("::"), tail)
        } else if let Some(tail) = rest.strip_prefix("self::") {
            (me.to_string(), tail)
        } else if children.iter().any(|child| rest.starts_with(&format!("{child}::"))) {
            (me.to_string(), rest)
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

/// The modules declared in `module`'s own folder (its children), by name.
fn children_of(module: &str, files: &BTreeMap<String, PathBuf>) -> BTreeSet<String> {
    let prefix = format!("{module}::");
    files
        .keys()
        .filter_map(|m| m.strip_prefix(&prefix))
        .filter(|rest| !rest.contains("::"))
        .map(String::from)
        .collect()
}

/// Whether `module` is built for tests only: a test module in a file of its own, or a test double
/// (feature `test-doubles`).
fn test_module(module: &str) -> bool {
    module.ends_with("::tests")
        || module.ends_with("::simulated")
        || module.ends_with("::harness")
        || module.ends_with("::rocr_harness")
        || module.contains("::suite")
}

/// Which modules of the `rpc` tree at `root` each one uses (test doubles left out: built for tests
/// only). A folder's `mod.rs` uses the children it names, re-exports included.
fn rpc_graph_at(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = BTreeMap::new();
    modules(root, "rpc", &mut files);
    graph_of(files)
}

/// Which production modules of the whole library each one uses (the crate root, which only
/// declares the top-level modules, left out).
fn crate_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    for folder in ["abi", "backend", "plugin", "rpc", "util"] {
        modules(&src.join(folder), folder, &mut files);
    }
    graph_of(files)
}

/// The use graph of the production modules among `files`.
fn graph_of(mut files: BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    files.retain(|module, _| !test_module(module));
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let code = production_code(&std::fs::read_to_string(file).unwrap());
        let children = if file.file_name().is_some_and(|n| n == "mod.rs") {
            children_of(module, &files)
        } else {
            BTreeSet::new()
        };
        let mut uses = BTreeSet::new();
        for path in referenced(&code, module, &children) {
            if let Some(target) = module_of(&path, &files) {
                if target != module {
                    uses.insert(target.clone());
                }
            }
        }
        graph.insert(module.clone(), uses);
    }
    graph
}

/// Which modules of `src/rpc` each one uses.
fn rpc_graph() -> BTreeMap<String, BTreeSet<String>> {
    rpc_graph_at(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rpc"))
}

/// The folders (and files) of `src/rpc` from the bottom up: the protocol knows nothing above it; the
/// record of the calls being served; observing, which calls are reported to; the plugin's own
/// services; serving; the front door. Each uses only what lies below it or in its own folder; the
/// root (`rpc/mod.rs`), which re-exports the front door's items, sits above them all.
const RPC_LAYERS: [&str; 6] = ["protocol", "calls", "observing", "services", "serving", "host_services"];

/// The layer of an `rpc` module ([`RPC_LAYERS`]); the root is above every layer.
fn layer(module: &str) -> usize {
    let top = module.split("::").nth(1);
    match top {
        None => RPC_LAYERS.len(),
        Some(name) => RPC_LAYERS
            .iter()
            .position(|layer| *layer == name)
            .unwrap_or_else(|| panic!("{module} is in no layer of RPC_LAYERS: add its folder there")),
    }
}

/// The uses of `graph` that point up a layer.
fn upward_uses(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (from, uses) in graph {
        for to in uses {
            if layer(to) > layer(from) {
                found.push(format!("{from} uses {to}, a layer above it"));
            }
        }
    }
    found
}

/// Every circle of `graph`: one is found, an edge of it dropped, and the search goes on.
fn every_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut all = Vec::new();
    let mut remaining = graph.clone();
    while let Some(cycle) = a_cycle(&remaining) {
        remaining.get_mut(&cycle[0]).unwrap().remove(&cycle[1]);
        all.push(cycle.join(" -> "));
    }
    all
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
    let cycles = every_cycle(&graph);
    assert!(cycles.is_empty(), "import circles in src/rpc:\n{}", cycles.join("\n"));
    let upward = upward_uses(&graph);
    assert!(
        upward.is_empty(),
        "uses against the layers of src/rpc:\n{}",
        upward.join("\n")
    );
}

/// The checks find what they look for: in a scratch `rpc` tree, a protocol file that reaches up
/// into serving (by a grouped `crate::` path), a `mod.rs` that uses its child through a relative
/// path, and a circle made with `self::` and `super::`.
#[test]
fn the_layout_checks_fail_on_an_upward_use_and_a_circle() {
    let root = std::env::temp_dir().join(format!("omprpc-layout-tree-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let write = |path: &str, text: &str| {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write("mod.rs", "pub mod protocol;\npub mod serving;\n");
    write("protocol/mod.rs", "pub mod port;\npub use port::Port;\n");
    write(
        "protocol/port.rs",
        "use crate::rpc::{serving::{server::RpcServer}};\npub struct Port;\n",
    );
    write("serving/mod.rs", "pub mod server;\npub mod threads;\n");
    write("serving/server.rs", "use super::threads::go;\npub struct RpcServer;\n");
    write(
        "serving/threads.rs",
        "pub fn go() { let _ = crate::rpc::serving::server::RpcServer; }\n#[cfg(test)]\nmod tests { use crate::rpc::x; }\n",
    );
    let graph = rpc_graph_at(&root);
    let _ = std::fs::remove_dir_all(&root);
    assert!(graph["rpc::protocol"].contains("rpc::protocol::port"), "{graph:?}");
    assert_eq!(
        upward_uses(&graph),
        vec!["rpc::protocol::port uses rpc::serving::server, a layer above it".to_string()]
    );
    assert_eq!(
        every_cycle(&graph),
        vec!["rpc::serving::server -> rpc::serving::threads -> rpc::serving::server".to_string()]
    );
}

#[test]
fn the_checker_finds_a_circle_and_resolves_paths() {
    let code = "use super::server::RpcServer;\nuse crate::rpc::{protocol::ffi, serving::{registry, threads}};";
    let found = referenced(code, "rpc::serving::calls", &BTreeSet::new());
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
        for path in referenced(&code, module, &BTreeSet::new()) {
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
    files.retain(|module, _| !test_module(module));
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

/// The folder a module lies in: its own for a `mod.rs`, its parent's for a file.
fn folder_of(module: &str, graph: &BTreeMap<String, BTreeSet<String>>) -> String {
    let is_folder = graph.keys().any(|m| m.starts_with(&format!("{module}::")));
    if is_folder {
        module.to_string()
    } else {
        module
            .rsplit_once("::")
            .map_or(module, |(parent, _)| parent)
            .to_string()
    }
}

/// The graph of folders: one folder uses another when a file of it uses a file of the other, a
/// folder's use of its own subfolders left out (it declares them).
fn folder_graph(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, uses) in graph {
        let from_folder = folder_of(from, graph);
        let entry = folders.entry(from_folder.clone()).or_default();
        for to in uses {
            let to_folder = folder_of(to, graph);
            if to_folder != from_folder && !to_folder.starts_with(&format!("{from_folder}::")) {
                entry.insert(to_folder);
            }
        }
    }
    folders
}

/// No import circle anywhere in the library, file by file or folder by folder.
#[test]
fn the_whole_library_has_no_import_circle() {
    let graph = crate_graph();
    assert!(graph.len() > 80, "the modules of src: {:?}", graph.keys());
    let cycles = every_cycle(&graph);
    assert!(
        cycles.is_empty(),
        "import circles between files of src:\n{}",
        cycles.join("\n")
    );
    let folders = folder_graph(&graph);
    let cycles = every_cycle(&folders);
    assert!(
        cycles.is_empty(),
        "import circles between folders of src:\n{}",
        cycles.join("\n")
    );
}

/// Two folders whose files use each other form a circle even when no two files do; a folder's use
/// of its own subfolder does not count.
#[test]
fn a_circle_between_folders_is_found_without_one_between_files() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["a::x", "a::inner"]),
        ("a::x", vec!["b::y"]),
        ("a::inner", vec![]),
        ("a::inner::deep", vec!["a::x"]),
        ("b", vec![]),
        ("b::y", vec![]),
        ("b::z", vec!["a::w"]),
        ("a::w", vec![]),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_string(), to.into_iter().map(String::from).collect()))
    .collect();
    assert!(every_cycle(&graph).is_empty());
    let folders = folder_graph(&graph);
    assert_eq!(every_cycle(&folders), vec!["a -> b -> a".to_string()], "{folders:?}");
}
