"""constraints/lowest.txt pins each framework at the floor its extra declares.

`make test-lowest` runs the suite against those pins, so a floor in pyproject.toml that no test
ran against cannot be published.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langchain-core", "langchain", "llama-index-core")


def test_lowest_pins_are_the_declared_floors() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    floors = {}
    for spec in extras["langchain"] + extras["llamaindex"]:
        name, floor = re.match(r"([a-z-]+)>=([0-9.]+)", spec).groups()  # type: ignore[union-attr]
        floors[name] = floor
    pins = dict(
        line.split("==")
        for line in (ROOT / "constraints" / "lowest.txt").read_text().splitlines()
        if line and not line.startswith("#")
    )
    assert set(floors) == set(FRAMEWORKS)
    for name in FRAMEWORKS:
        assert tuple(map(int, pins[name].split("."))) == tuple(
            map(int, floors[name].split("."))
        ) + (0,) * (pins[name].count(".") - floors[name].count(".")), name
