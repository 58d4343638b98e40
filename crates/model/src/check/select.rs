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
    /// dispatches, or why it names none.
    pub fn resolve(&self, dispatches: &[Dispatch], tokens: u32) -> Result<u64, String> {
        let per_step = dispatches.len() as u64;
        let total = per_step * tokens as u64;
        match self {
            BreakAt::Seq(n) if *n < total => Ok(*n),
            BreakAt::Seq(n) => Err(format!(
                "--break-at {n}: the run has {total} dispatches ({tokens} tokens × {per_step}), numbered from 0"
            )),
            BreakAt::Label { token, .. } if *token >= tokens => Err(format!(
                "--break-at token={token}: only {tokens} tokens are checked (0..{})",
                tokens
            )),
            BreakAt::Label { token, label } => dispatches
                .iter()
                .position(|d| d.label == *label)
                .map(|i| *token as u64 * per_step + i as u64)
                .ok_or_else(|| {
                    format!("--break-at label={label}: no dispatch has that label (e.g. L0.rope, output, argmax)")
                }),
        }
    }
}
