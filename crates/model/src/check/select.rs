//! Choosing dispatches: `--filter op=rms_norm,layer=3..5,token=2,label=L3.rope` (tensor
//! traces) and `--break-at N | token=T,label=L` (the breakpoint).

use std::ops::RangeInclusive;

use gpuscope_runtime::Dispatch;

/// Dispatches to trace: every condition given must hold; a key may repeat (any of its
/// values matches).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Op names or families (`gemv` matches `gemv_q4_1`).
    pub ops: Vec<String>,
    pub labels: Vec<String>,
    pub layers: Vec<RangeInclusive<u32>>,
    pub tokens: Vec<RangeInclusive<u32>>,
}

fn range(key: &str, v: &str) -> Result<RangeInclusive<u32>, String> {
    let num = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|_| format!("{key}={v}: `{s}` is not a number"))
    };
    match v.split_once("..") {
        Some((a, b)) => {
            let (a, b) = (num(a)?, num(b.trim_start_matches('='))?);
            if a > b {
                return Err(format!("{key}={v}: empty range"));
            }
            Ok(a..=b)
        }
        None => {
            let n = num(v)?;
            Ok(n..=n)
        }
    }
}

/// Where a dispatch of the unfused graph (`--fuse none`) does its work when fused: the
/// part of its label (`L3.rope` → `rope`) → the parts of the dispatches that may take it
/// in, tried in order (rope goes with the head norms where an architecture has them,
/// else into the q/k/v gemv; a residual add with a post norm, else into the projection;
/// attention and its output projection into `attention_output` where one kernel runs
/// both, whose partials the next gemv adds, as the folded down projection's).
/// The names are the graph builders' (decode_graph.rs); a test checks every preset's
/// unfused labels against its default graph.
const FUSED_INTO: &[(&str, &[&str])] = &[
    ("attn_norm", &["attn_qkv"]),
    ("rope", &["attn_qk_norm", "attn_qkv"]),
    ("attn_scores", &["attention", "attention_output"]),
    ("attn_softmax", &["attention", "attention_output"]),
    ("attn_values", &["attention", "attention_output"]),
    ("attn_output", &["attention_output"]),
    (
        "attn_output_add",
        &["post_attention_norm", "attn_output", "attention_output"],
    ),
    ("ffn_norm", &["ffn_gate_up", "ffn_gate_up_down"]),
    ("ffn_gate_up", &["ffn_gate_up_down"]),
    ("ffn_silu_mul", &["ffn_gate_up", "ffn_gate_up_down"]),
    ("ffn_gelu_mul", &["ffn_gate_up"]),
    ("ffn_down", &["ffn_gate_up_down"]),
    (
        "ffn_down_add",
        &["post_ffw_norm", "ffn_down", "ffn_gate_up_down"],
    ),
    ("output_norm", &["output"]),
];

/// Where a post norm and its residual add run when they fold into the next gemv (the
/// `post_norm` fusion, decode_graph.rs): the part of the label → (layers on, the host's
/// part). Such a host's op starts with [`FOLDED_POST_OP`].
const FOLDED_POST: &[(&str, u32, &str)] = &[
    ("post_attention_norm", 0, "ffn_gate_up"),
    ("attn_output_add", 0, "ffn_gate_up"),
    ("post_ffw_norm", 1, "attn_qkv"),
    ("ffn_down_add", 1, "attn_qkv"),
];

/// The op-name prefix of a gemv with a post norm folded in.
pub const FOLDED_POST_OP: &str = "rms_norm+add+";

/// The dispatch that took in `label`'s post norm or residual add, where it folded into
/// the next gemv (of this layer or the next: `L3.post_ffw_norm` → `L4.attn_qkv`).
fn folded_post_host(dispatches: &[Dispatch], label: &str) -> Option<(usize, String)> {
    let (layer, part) = label.split_once('.')?;
    let n: u32 = layer.strip_prefix('L')?.parse().ok()?;
    let (_, on, host) = FOLDED_POST.iter().find(|(p, ..)| *p == part)?;
    let host = format!("L{}.{host}", n + on);
    let i = dispatches
        .iter()
        .position(|d| d.label == host && d.op.starts_with(FOLDED_POST_OP))?;
    Some((i, host))
}

/// The labels of the dispatches that may do `label`'s work in a fused graph (`L3.rope`
/// → `L3.attn_qk_norm`, `L3.attn_qkv`), whether or not the graph has them.
fn fused_hosts(label: &str) -> Vec<String> {
    let (prefix, part) = match label.split_once('.') {
        Some((layer, part)) => (format!("{layer}."), part),
        None => (String::new(), label),
    };
    FUSED_INTO
        .iter()
        .find(|(p, _)| *p == part)
        .map_or(&[][..], |(_, hosts)| hosts)
        .iter()
        .map(|host| format!("{prefix}{host}"))
        .collect()
}

/// Where `label`'s work runs in `dispatches`: its own dispatch, else the fused dispatch
/// that took it in (`Some` label then), else `None`.
pub fn find_label(dispatches: &[Dispatch], label: &str) -> Option<(usize, Option<String>)> {
    if let Some(i) = dispatches.iter().position(|d| d.label == label) {
        return Some((i, None));
    }
    if let Some((i, host)) = folded_post_host(dispatches, label) {
        return Some((i, Some(host)));
    }
    fused_hosts(label).into_iter().find_map(|host| {
        let i = dispatches.iter().position(|d| d.label == host)?;
        Some((i, Some(host)))
    })
}

/// Labels that exist, for an error: the first layer's and the head's.
pub fn some_labels(dispatches: &[Dispatch]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for d in dispatches.iter().filter(|d| d.layer.is_none_or(|l| l == 0)) {
        if !seen.contains(&d.label.as_str()) {
            seen.push(&d.label);
        }
    }
    seen.join(", ")
}

/// A note that `label` runs fused into `host` (from [`find_label`]).
pub fn fused_note(flag: &str, label: &str, host: &str, dispatches: &[Dispatch]) -> String {
    let op = dispatches
        .iter()
        .find(|d| d.label == host)
        .map_or("", |d| d.op.as_str());
    format!("{flag} {label}: with this plan's fusions it runs inside {host} ({op}); that dispatch is used (--fuse none runs it alone)")
}

fn op_matches(key: &str, op: &str) -> bool {
    op == key || op.strip_prefix(key).is_some_and(|r| r.starts_with('_'))
}

impl Filter {
    /// Parses `KEY=VALUE,...` with keys `op`, `label`, `layer` (N or A..B, inclusive) and
    /// `token` (N or A..B).
    pub fn parse(s: &str) -> Result<Filter, String> {
        let mut f = Filter::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').ok_or_else(|| {
                format!("--filter {s}: `{part}` is not KEY=VALUE (keys: op, label, layer, token)")
            })?;
            match k.trim() {
                "op" => f.ops.push(v.trim().to_string()),
                "label" => f.labels.push(v.trim().to_string()),
                "layer" => f.layers.push(range("layer", v)?),
                "token" => f.tokens.push(range("token", v)?),
                other => {
                    return Err(format!(
                        "--filter {s}: unknown key `{other}` (keys: op, label, layer, token)"
                    ))
                }
            }
        }
        if f == Filter::default() {
            return Err(format!("--filter {s}: no condition given"));
        }
        Ok(f)
    }

    /// Whether dispatch `d` of any token matches (the token condition aside).
    pub fn matches_dispatch(&self, d: &Dispatch) -> bool {
        (self.ops.is_empty() || self.ops.iter().any(|o| op_matches(o, &d.op)))
            && (self.labels.is_empty() || self.labels.contains(&d.label))
            && (self.layers.is_empty()
                || d.layer
                    .is_some_and(|l| self.layers.iter().any(|r| r.contains(&l))))
    }

    /// The filter with each label the graph has no dispatch for replaced by the fused
    /// dispatch's that does its work, and a note for each; an unknown label is an error
    /// listing labels that exist.
    pub fn for_graph(&self, dispatches: &[Dispatch]) -> Result<(Filter, Vec<String>), String> {
        let mut f = self.clone();
        let mut notes = Vec::new();
        for l in &mut f.labels {
            match find_label(dispatches, l) {
                Some((_, None)) => {}
                Some((_, Some(host))) => {
                    notes.push(fused_note("--filter label", l, &host, dispatches));
                    *l = host;
                }
                None => {
                    return Err(format!(
                        "--filter label={l}: no dispatch has that label (here: {})",
                        some_labels(dispatches)
                    ))
                }
            }
        }
        Ok((f, notes))
    }

    pub fn matches_token(&self, token: u32) -> bool {
        self.tokens.is_empty() || self.tokens.iter().any(|r| r.contains(&token))
    }
}

/// Where to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakAt {
    /// The N-th dispatch of the run (0-based, counting every token's dispatches; the
    /// report's `seq`).
    Seq(u64),
    /// The first dispatch labelled `label` in token `token`.
    Label { token: u32, label: String },
}

impl BreakAt {
    /// Parses `N` or `token=T,label=L`.
    pub fn parse(s: &str) -> Result<BreakAt, String> {
        if let Ok(n) = s.trim().parse::<u64>() {
            return Ok(BreakAt::Seq(n));
        }
        let (mut token, mut label) = (None, None);
        for part in s.split(',').map(str::trim) {
            match part.split_once('=') {
                Some(("token", v)) => {
                    token = Some(
                        v.trim()
                            .parse::<u32>()
                            .map_err(|_| format!("--break-at {s}: `{v}` is not a token index"))?,
                    )
                }
                Some(("label", v)) => label = Some(v.trim().to_string()),
                _ => {
                    return Err(format!(
                        "--break-at {s}: expected a dispatch number or token=T,label=L"
                    ))
                }
            }
        }
        match (token, label) {
            (Some(token), Some(label)) => Ok(BreakAt::Label { token, label }),
            _ => Err(format!(
                "--break-at {s}: give both token=T and label=L (or a dispatch number)"
            )),
        }
    }

    /// The `seq` this breakpoint names in a run of `tokens` steps of `graph`'s
    /// dispatches (with a note when its label runs fused into another dispatch), or why
    /// it names none.
    pub fn resolve(
        &self,
        dispatches: &[Dispatch],
        tokens: u32,
    ) -> Result<(u64, Option<String>), String> {
        let per_step = dispatches.len() as u64;
        let total = per_step * tokens as u64;
        match self {
            BreakAt::Seq(n) if *n < total => Ok((*n, None)),
            BreakAt::Seq(n) => Err(format!(
                "--break-at {n}: the run has {total} dispatches ({tokens} tokens × {per_step}), numbered from 0"
            )),
            BreakAt::Label { token, .. } if *token >= tokens => Err(format!(
                "--break-at token={token}: only {tokens} tokens are checked (0..{})",
                tokens
            )),
            BreakAt::Label { token, label } => match find_label(dispatches, label) {
                Some((i, host)) => Ok((
                    *token as u64 * per_step + i as u64,
                    host.map(|h| fused_note("--break-at label", label, &h, dispatches)),
                )),
                None => Err(format!(
                    "--break-at label={label}: no dispatch has that label (here: {})",
                    some_labels(dispatches)
                )),
            },
        }
    }
}
