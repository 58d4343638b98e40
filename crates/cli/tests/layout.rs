//! The workspace's shape, checked: crate dependencies follow the layers, no module cycle
//! inside a crate, no function over [`MAX_FN_LINES`] lines in non-test code.
//!
//! `cargo test -p gpuscope --test tests layout` is the command that shows all three; each
//! failure lists every offender, not the first.
//!
//! The module rule: a file is a module; a module may use its ancestors and its
//! descendants (a parent is the namespace that declares and re-exports its children),
//! and every other `use` or path between two modules of one crate must form no cycle.
//! Paths are read with `syn` from `use` trees and from paths written out in code
//! (`crate::a::b`, `super::x`, `self::x`, or a child module's name); a path resolves to
//! the deepest module it names. Items under `#[cfg(test)]` are left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// The longest function allowed in non-test code, in lines from `fn` to its closing brace.
const MAX_FN_LINES: usize = 120;

/// The layers, lowest first: a crate may depend (normal dependencies) only on crates
/// that come before it. Dev-dependencies may reach any crate (tests, doc examples).
const LAYERS: &[&str] = &[
    "gpuscope-trace",
    "gpuscope-report",
    "gpuscope-record",
    "gpuscope-layer",
    "gpuscope-runtime",
    "gpuscope-ops",
    "gpuscope-model",
    "gpuscope",
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// (package name, src dir) of every workspace member.
fn members() -> Vec<(String, PathBuf, serde_json::Value)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap());
            let src = manifest.parent().unwrap().join("src");
            (p["name"].as_str().unwrap().to_string(), src, p.clone())
        })
        .collect()
}

#[test]
fn crate_dependencies_follow_the_layers() {
    let mut wrong = Vec::new();
    for (name, _, package) in members() {
        let Some(level) = LAYERS.iter().position(|l| *l == name) else {
            wrong.push(format!("{name} is not in the layer list of this test"));
            continue;
        };
        for dep in package["dependencies"].as_array().unwrap() {
            let dep_name = dep["name"].as_str().unwrap();
            let normal = dep["kind"].is_null();
            match LAYERS.iter().position(|l| *l == dep_name) {
                Some(d) if normal && d >= level => {
                    wrong.push(format!("{name} depends on {dep_name}, a layer above it"))
                }
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every `.rs` file under `src` with its module path (`a/b.rs` and `a/b/mod.rs` are
/// `[a, b]`; `lib.rs` and `main.rs` the root).
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<Vec<String>, PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                let mut p = prefix.to_vec();
                p.push(stem);
                walk(&path, &p, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let mut p = prefix.to_vec();
                if !(stem == "mod" || (prefix.is_empty() && (stem == "lib" || stem == "main"))) {
                    p.push(stem);
                }
                out.insert(p, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(src, &[], &mut out);
    out
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The module paths one file refers to (unresolved segment lists, with the file's own
/// module path for `self` / `super`), and its functions' lengths.
struct FileScan {
    module: Vec<String>,
    refs: Vec<Vec<String>>,
    long_fns: Vec<(String, usize, usize)>,
}

impl FileScan {
    fn path(&mut self, segments: Vec<String>) {
        if let Some(first) = segments.first() {
            if first == "crate" || first == "super" || first == "self" || segments.len() > 1 {
                self.refs.push(segments);
            }
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut s = prefix.clone();
                if n.ident != "self" {
                    s.push(n.ident.to_string());
                }
                self.refs.push(s);
            }
            syn::UseTree::Rename(r) => {
                let mut s = prefix.clone();
                s.push(r.ident.to_string());
                self.refs.push(s);
            }
            syn::UseTree::Glob(_) => self.refs.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn function(&mut self, name: String, start: proc_macro2::Span, block: &syn::Block) {
        let first = start.start().line;
        let last = block.span().end().line;
        let lines = last + 1 - first;
        if lines > MAX_FN_LINES {
            self.long_fns.push((name, first, lines));
        }
    }
}

impl<'a> Visit<'a> for FileScan {
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        self.function(f.sig.ident.to_string(), f.sig.fn_token.span, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'a syn::ItemImpl) {
        if !is_cfg_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        self.function(f.sig.ident.to_string(), f.sig.fn_token.span, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.function(f.sig.ident.to_string(), f.sig.fn_token.span, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        if !is_cfg_test(&u.attrs) {
            self.use_tree(&mut Vec::new(), &u.tree);
        }
    }
    fn visit_path(&mut self, p: &'a syn::Path) {
        self.path(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The module a path names, resolved from `module` (the deepest known module on it).
fn resolve(
    module: &[String],
    segments: &[String],
    known: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<Vec<String>> {
    let mut at: Vec<String>;
    let mut rest = segments;
    match segments.first()?.as_str() {
        "crate" => {
            at = Vec::new();
            rest = &segments[1..];
        }
        "self" => {
            at = module.to_vec();
            rest = &segments[1..];
        }
        "super" => {
            at = module.to_vec();
            while rest.first().is_some_and(|s| s == "super") {
                at.pop();
                rest = &rest[1..];
            }
        }
        child => {
            let mut c = module.to_vec();
            c.push(child.to_string());
            if !known.contains_key(&c) {
                return None;
            }
            at = module.to_vec();
        }
    }
    for s in rest {
        let mut next = at.clone();
        next.push(s.clone());
        if !known.contains_key(&next) {
            break;
        }
        at = next;
    }
    Some(at)
}

fn is_prefix(a: &[String], b: &[String]) -> bool {
    a.len() <= b.len() && b[..a.len()] == *a
}

/// Strongly connected components of more than one module (Tarjan).
fn cycles(edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>) -> Vec<Vec<Vec<String>>> {
    struct Tarjan<'a> {
        edges: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        index: BTreeMap<&'a Vec<String>, usize>,
        low: BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a Vec<String>) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut scc = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    scc.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort();
                    self.out.push(scc);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

fn scan_crate(src: &Path) -> (Vec<FileScan>, BTreeMap<Vec<String>, PathBuf>) {
    let known = modules(src);
    let scans = known
        .iter()
        .map(|(module, path)| {
            let text = std::fs::read_to_string(path).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut scan = FileScan {
                module: module.clone(),
                refs: Vec::new(),
                long_fns: Vec::new(),
            };
            scan.visit_file(&file);
            scan
        })
        .collect();
    (scans, known)
}

fn show(m: &[String]) -> String {
    if m.is_empty() {
        "crate".into()
    } else {
        m.join("::")
    }
}

#[test]
fn no_module_cycle_inside_a_crate() {
    let mut found = Vec::new();
    for (name, src, _) in members() {
        let (scans, known) = scan_crate(&src);
        let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
        for scan in &scans {
            for r in &scan.refs {
                let Some(target) = resolve(&scan.module, r, &known) else {
                    continue;
                };
                if is_prefix(&target, &scan.module) || is_prefix(&scan.module, &target) {
                    continue;
                }
                edges.entry(scan.module.clone()).or_default().insert(target);
            }
        }
        for scc in cycles(&edges) {
            let names: Vec<String> = scc.iter().map(|m| show(m)).collect();
            found.push(format!("{name}: {}", names.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn no_function_over_the_line_limit() {
    let mut long = Vec::new();
    for (_, src, _) in members() {
        let (scans, known) = scan_crate(&src);
        for scan in scans {
            for (f, line, lines) in scan.long_fns {
                let file = known[&scan.module].display().to_string();
                long.push(format!("{file}:{line} {f}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines:\n{}",
        long.join("\n")
    );
}

/// The README's option tables and text name every option `--help` lists (issue 29: they
/// had fallen behind), for every command.
#[test]
fn the_readme_names_every_option_of_every_command() {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let commands: &[&[&str]] = &[
        &["profile"],
        &["run"],
        &["report"],
        &["replay"],
        &["diff"],
        &["bench"],
        &["check"],
        &["ops", "test"],
        &["ops", "perf"],
        &["peak"],
        &["attach"],
        &["synth"],
    ];
    let mut missing = Vec::new();
    for cmd in commands {
        let mut args = cmd.to_vec();
        args.push("--help");
        let out = crate::common::gpuscope(&args);
        assert!(out.status.success(), "{cmd:?} --help");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // An option line: `  -r, --repetitions <N>` or `      --json <FILE>`.
            let line = line.trim_start();
            if !line.starts_with('-') {
                continue;
            }
            let Some(flag) = line.split([' ', ',', '=']).find(|t| t.starts_with("--")) else {
                continue;
            };
            let long = flag.len() > 2;
            if long && flag != "--help" && flag != "--version" && !readme.contains(flag) {
                missing.push(format!("{} {flag}", cmd.join(" ")));
            }
        }
    }
    assert!(missing.is_empty(), "README misses: {missing:?}");
}
