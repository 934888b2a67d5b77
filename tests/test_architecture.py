"""The house rules of issue 14, as tests: the twins match, channels plug in, the layers hold."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Literal

import pytest

ROOT = Path(__file__).resolve().parents[1]

# the sync and async spellings of the same lifecycle methods
_LIFECYCLE = {"close": "aclose", "__enter__": "__aenter__", "__exit__": "__aexit__"}


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(fn) for name, fn in vars(cls).items()
            if callable(fn) and (not name.startswith("_") or name in _LIFECYCLE or name in _LIFECYCLE.values())}


def test_memory_and_async_memory_expose_the_same_methods_and_parameters() -> None:
    from ripple import AsyncMemory, Memory

    sync, asyn = _public(Memory), _public(AsyncMemory)
    assert {_LIFECYCLE.get(n, n) for n in sync} == set(asyn), "a method one twin has and the other lacks"
    for name, sig in sync.items():
        other = asyn[_LIFECYCLE.get(name, name)]
        assert list(sig.parameters) == list(other.parameters), name
        for p, q in zip(sig.parameters.values(), other.parameters.values()):
            assert (p.kind, p.default) == (q.kind, q.default), f"{name}({p.name})"
    assert list(inspect.signature(Memory.__init__).parameters) == list(inspect.signature(AsyncMemory.__init__).parameters)


def test_every_async_method_is_awaitable_or_an_async_iterator() -> None:
    from ripple import AsyncMemory

    factories = {"session"}  # builds an AsyncSession without I/O; the session's own methods are awaited
    for name, fn in vars(AsyncMemory).items():
        if callable(fn) and not name.startswith("_") and name not in factories:
            assert inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn), name


def test_a_registered_toy_channel_shows_in_parts_and_via(tmp_path: Path) -> None:
    """A new channel needs a config class and a function: nothing in the pipeline changes."""
    from graphstore.requests import ListMemories
    from ripple import ChannelConfig, Memory, RecallConfig, SpreadConfig
    from ripple.embedding import HashEmbedder
    from ripple.recall.candidates import ChannelResult
    from ripple.recall.channels import ChannelContext, ChannelPlan, register_channel

    class OldestConfig(ChannelConfig):
        name: Literal["oldest"] = "oldest"

    @register_channel(OldestConfig)
    def oldest(ctx: ChannelContext, cfg: OldestConfig) -> ChannelPlan:
        """Gives the user's first memory a large activation, whatever the query."""
        rows = yield ListMemories(ctx.query.user_id, limit=1)
        return ChannelResult(activation={rows[0].id: 5.0}, sources=set(ctx.sources(cfg)))

    from extractors import GazetteerExtractor

    with Memory(path=str(tmp_path / "s"), embedder=HashEmbedder(64), extractor=GazetteerExtractor({})) as mem:
        first = mem.add("The boiler was serviced in March.", user_id="u", session_id="s")[0]
        mem.add("Dana likes green tea with honey.", user_id="u", session_id="s")
        config = RecallConfig(spread=SpreadConfig(channels=(OldestConfig(weight=0.5),)))
        res = mem.recall("what does Dana drink?", user_id="u", k=2, config=config)
    top = res.hits[0]
    assert top.memory.id == first.id and top.via == "oldest"
    assert top.parts.channels == {"oldest": 5.0} and top.parts.activation == pytest.approx(2.5)
    # and the config round-trips through JSON by the channel's name
    again = RecallConfig.model_validate_json(config.model_dump_json())
    assert isinstance(again.spread.channels[0], OldestConfig)


def test_an_unknown_channel_in_a_saved_config_is_a_clear_error() -> None:
    from pydantic import ValidationError

    from ripple import RecallConfig

    with pytest.raises(ValidationError, match="unknown recall channel 'nope'"):
        RecallConfig.model_validate({"spread": {"channels": [{"name": "nope"}]}})


def test_modes_are_recipe_names() -> None:
    from ripple.recall.recipes import DEFAULT, MODES, RECIPES

    assert MODES == ("ripple", "flat", "bm25", "hybrid", "ppr")
    assert RECIPES["ripple"] is DEFAULT and RECIPES["flat"].spread.channels == ()


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


@pytest.mark.parametrize("package", ["graphstore", "extractors"])
def test_storage_and_extraction_never_import_the_engine(package: str) -> None:
    """graphstore and extractors may use the leaf error module, nothing else of ripple."""
    for path in (ROOT / package).rglob("*.py"):
        bad = {m for m in _imports(path) if m.split(".")[0] == "ripple" and m != "ripple.errors"}
        # extractors' model loading and graphstore's testing helpers name nothing else either
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_engine_never_imports_a_backend_module() -> None:
    backends = {"graphstore.sqlite", "graphstore.neo4j", "graphstore.vectors", "graphstore.threaded", "graphstore.memory",
                "graphstore.sharded", "graphstore._shardmove", "graphstore._routing", "graphstore._shardplan"}
    for path in (ROOT / "ripple").rglob("*.py"):
        bad = _imports(path) & backends
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_importing_the_leaf_modules_loads_no_engine() -> None:
    code = ("import sys, graphstore, extractors, ripple.errors; "
            "print(sorted(m for m in sys.modules if m.startswith('ripple')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "['ripple', 'ripple.errors']"


def test_agent_layer_uses_only_the_public_api() -> None:
    """ripple/agent is a client of Memory / AsyncMemory: no store or private engine imports."""
    for path in (ROOT / "ripple" / "agent").rglob("*.py"):
        for mod in _imports(path):
            top = mod.split(".")[0]
            assert top != "graphstore", f"{path.name} imports {mod}"
            if top == "ripple":
                assert not any(part.startswith("_") for part in mod.split(".")[1:]) or mod.startswith("ripple.agent"), (
                    f"{path.name} imports the private {mod}")
