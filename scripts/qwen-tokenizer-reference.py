#!/usr/bin/env python3
"""Reference tokenizations for gpuscope's Qwen tokenizer test (crates/model/tests/tokenizer_qwen.rs).

Qwen's own vocabulary (qwen.tiktoken from the `dashscope==2.0.2` wheel, as
`gpuscope_model::test_model` fetches it) encoded by OpenAI's `tiktoken`, with the split
pattern and special tokens of Qwen's own tokenizer (dashscope/tokenizers/qwen_tokenizer.py,
the same pattern as llama.cpp's `qwen2` pre-tokenizer): an implementation of rank-based
BPE independent of the `tokenizers` crate gpuscope builds on.

Usage: pip install --target /tmp/tk tiktoken
       PYTHONPATH=/tmp/tk python3 scripts/qwen-tokenizer-reference.py QWEN_TIKTOKEN \
           crates/model/tests/data/qwen_tokenizations.json
"""
import base64
import hashlib
import json
import sys

import tiktoken

PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
FIRST_SPECIAL = 151643

# Prose, code, digits, contractions in both cases, whitespace runs and line ends,
# accented Latin, CJK, Cyrillic, emoji with joiners, punctuation runs, a URL, and the
# chat markers.
TEXTS = [
    "Hello, world! This is a test.",
    "The capital of France is Paris.",
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "Numbers: 12345 and 3.14159, 1,000,000!",
    "I'm sure they'll say it's what we've done. DON'T SHOUT, I'D say.",
    "  leading spaces, trailing spaces   \n\n\nnew lines\r\nwindows\r\n",
    "\u4e2d\u6587\u6d4b\u8bd5\uff1a\u4f60\u597d\uff0c\u4e16\u754c\uff01",
    "\u00c9migr\u00e9 caf\u00e9 na\u00efve fa\u00e7ade \u2014 \u201cquotes\u201d \u2018single\u2019 \u2026 ellipsis",
    "emoji \U0001F642\U0001F680 and \U0001F469\u200d\U0001F469\u200d\U0001F467 family",
    "tabs\tand\u00a0no-break spaces",
    "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442 \u0438 \u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8",
    "antidisestablishmentarianism supercalifragilisticexpialidocious",
    "x = [i**2 for i in range(10) if i % 2 == 0]  # squares!!!???",
    "URL: https://example.com/path?query=1&b=2#frag",
    "   \t  ",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
]


def main():
    path, out = sys.argv[1], sys.argv[2]
    data = open(path, "rb").read()
    ranks = {
        base64.b64decode(tok): int(rank)
        for tok, rank in (line.split() for line in data.splitlines() if line)
    }
    enc = tiktoken.Encoding(
        "qwen",
        pat_str=PAT_STR,
        mergeable_ranks=ranks,
        special_tokens={t: FIRST_SPECIAL + i for i, t in enumerate(SPECIAL)},
    )
    cases = [{"text": t, "ids": enc.encode(t, allowed_special="all")} for t in TEXTS]
    doc = {
        "about": "Qwen's qwen.tiktoken (dashscope 2.0.2) encoded by tiktoken with Qwen's split "
        "pattern; written by scripts/qwen-tokenizer-reference.py",
        "vocab_sha256": hashlib.sha256(data).hexdigest(),
        "tiktoken": tiktoken.__version__ if hasattr(tiktoken, "__version__") else "unknown",
        "special_tokens": {t: FIRST_SPECIAL + i for i, t in enumerate(SPECIAL)},
        "cases": cases,
    }
    # One line per case: a diff of the file shows which text changed.
    head = json.dumps({k: v for k, v in doc.items() if k != "cases"}, ensure_ascii=False, indent=1)
    lines = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases)
    with open(out + ".tmp", "w") as f:
        f.write(head[:-2] + ',\n "cases": [\n' + lines + "\n ]\n}\n")
    import os

    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
