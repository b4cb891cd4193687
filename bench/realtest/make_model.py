"""Build the realtest's tiny Llama model folder with no download: `python make_model.py DIR`.

Run by the engine's own Python (it needs the `tokenizers` library that vLLM installs). Writes
into DIR:
- tokenizer.json: a byte-level BPE tokenizer (2,048 tokens) trained here on local text, the
  Python standard library's own sources (fixed order, first ~4 MB), so no hub is asked;
- tokenizer_config.json: a fast tokenizer with <s>/</s> and a plain chat template (vLLM's chat
  endpoint needs one);
- config.json: a 2-layer Llama (hidden 128, 2 heads of 64) with that vocabulary. The weights
  come from `--load-format dummy` (random), so answers are noise: the load test measures the
  engine, not the model.
Idempotent: a folder that already has all three files is left alone.
"""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

VOCAB = 2048
TEXT_BYTES = 4_000_000
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "hidden_act": "silu",
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": VOCAB,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


def _texts():
    total = 0
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        total += len(text)
        yield text
        if total > TEXT_BYTES:
            return


def main(out: Path) -> int:
    files = [out / n for n in ("config.json", "tokenizer.json", "tokenizer_config.json")]
    if all(f.exists() for f in files):
        print(f"model folder ready: {out}")
        return 0
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_texts(), trainer=trainer)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "pad_token": "<pad>", "model_max_length": 2048,
        "add_bos_token": False, "chat_template": CHAT_TEMPLATE,
    }, indent=1))
    config = dict(CONFIG, vocab_size=tok.get_vocab_size())
    (out / "config.json").write_text(json.dumps(config, indent=1))
    print(f"model folder written: {out} (vocab {tok.get_vocab_size()})")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
