"""What an image costs in input tokens, per model family, from the providers' published rules.

The counting layer's image rules, below the counters (``_tokens``), which add an image part's
cost to its message. An image's size is read from the header of inline data (a ``data:`` URL or
base64 field: PNG, JPEG, GIF and WebP headers, with the standard library); an image given by URL,
or whose header cannot be read, costs the most its rule allows for its ``detail``. Every image
cost is an estimate: a count that includes one is not exact.

The rules (:func:`image_rule_for` picks one from the model name, else from the tokenizer):

- OpenAI tiles (gpt-4o, gpt-4.1, gpt-4.5, gpt-5, o1, o3): ``detail: low`` costs the base; else
  the image is scaled to fit 2048x2048, then its shortest side down to 768, and each 512px tile
  costs the tile price, plus the base. gpt-4o and gpt-4.1: 85 + 170 per tile (1024x1024 costs
  765, 2048x4096 costs 1105); gpt-4o-mini 2,833 + 5,667; o1 and o3 75 + 150;
  computer-use-preview 65 + 129. The gpt-5 family is counted as 85 + 170 (OpenAI lists 70 + 140,
  and reports of GPT-5.2 billing 1.2x that: the larger is kept).
- OpenAI patches (gpt-4.1-mini, gpt-4.1-nano, gpt-5-mini, gpt-5-nano, o4-mini): 32px patches,
  at most 1,536 (larger images are scaled down to fit), times the model's multiplier (1.62,
  2.46, 1.62, 2.46, 1.72); ``detail`` does not change it.
- Anthropic: ``ceil(width x height / 750)`` after scaling to a long edge of at most 1,568 px and
  at most 1,600 tokens (about 1.2 megapixels).
- Gemini: 258 for an image of at most 384 px on both sides, else 258 per 768x768 tile; an
  image of unknown size is counted as 3072x3072 (16 tiles).
- Any other model: the largest of the OpenAI tile, Anthropic and Gemini costs.

>>> OPENAI_TILES.tokens(1024, 1024, "high"), OPENAI_TILES.tokens(2048, 4096, "high")
(765, 1105)
>>> ANTHROPIC.tokens(1000, 1000, None)
1334
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from session_migrator.models._names import route_name

__all__ = [
    "ANTHROPIC",
    "CONSERVATIVE",
    "GEMINI",
    "OPENAI_TILES",
    "ImageRule",
    "image_detail",
    "image_rule_for",
    "image_size",
]

#: Bytes of decoded data read to find an image's size (a JPEG's frame header can follow EXIF).
_HEADER_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class ImageRule:
    """One family's image pricing. ``kind`` is ``tiles``, ``patches``, ``anthropic``, ``gemini``
    or ``conservative`` (the largest of the others); ``base`` and ``per_unit`` are its prices
    (tokens; ``per_unit`` is the patch multiplier for ``patches``)."""

    name: str
    kind: str
    base: float = 0
    per_unit: float = 0

    def tokens(self, width: int | None, height: int | None, detail: str | None) -> int:
        """The cost of an image of this size (``None``: unknown, the worst case)."""
        if width is not None and height is not None and (width <= 0 or height <= 0):
            width = height = None
        if self.kind == "tiles":
            return _tiles(width, height, detail, int(self.base), int(self.per_unit))
        if self.kind == "patches":
            return math.ceil(_patches(width, height) * self.per_unit)
        if self.kind == "anthropic":
            return _anthropic(width, height)
        if self.kind == "gemini":
            return _gemini(width, height)
        return max(rule.tokens(width, height, detail) for rule in (OPENAI_TILES, ANTHROPIC, GEMINI))

    def part_tokens(self, data: Mapping[str, object]) -> int:
        """The cost of one image part (its size read from inline data where it can be)."""
        size = image_size(data)
        width, height = size if size is not None else (None, None)
        return self.tokens(width, height, image_detail(data))


def _tiles(width: int | None, height: int | None, detail: str | None, base: int, tile: int) -> int:
    if detail == "low":
        return base
    if width is None or height is None:
        return base + tile * 8  # the most tiles an image can take: 768x2048 covers 2x4
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    return base + tile * math.ceil(w / 512) * math.ceil(h / 512)


_PATCH = 32
_MAX_PATCHES = 1536


def _patches(width: int | None, height: int | None) -> int:
    if width is None or height is None:
        return _MAX_PATCHES
    count = math.ceil(width / _PATCH) * math.ceil(height / _PATCH)
    if count <= _MAX_PATCHES:
        return count
    # OpenAI's published steps: shrink to about the budget, then so whole patches fit the width
    shrink = math.sqrt(_MAX_PATCHES * _PATCH**2 / (width * height))
    w, h = width * shrink, height * shrink
    w_patches = w / _PATCH
    fit = math.floor(w_patches) / w_patches
    w, h = w * fit, h * fit
    return min(_MAX_PATCHES, math.ceil(w / _PATCH) * math.ceil(h / _PATCH))


_ANTHROPIC_EDGE = 1568
_ANTHROPIC_MAX = 1600


def _anthropic(width: int | None, height: int | None) -> int:
    if width is None or height is None:
        return _ANTHROPIC_MAX
    w, h = float(width), float(height)
    if max(w, h) > _ANTHROPIC_EDGE:
        scale = _ANTHROPIC_EDGE / max(w, h)
        w, h = w * scale, h * scale
    return min(_ANTHROPIC_MAX, math.ceil(w * h / 750))


_GEMINI_TILE = 768
_GEMINI_UNKNOWN = 3072


def _gemini(width: int | None, height: int | None) -> int:
    if width is None or height is None:
        width = height = _GEMINI_UNKNOWN
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / _GEMINI_TILE) * math.ceil(height / _GEMINI_TILE)


OPENAI_TILES = ImageRule("openai-tiles", "tiles", 85, 170)
ANTHROPIC = ImageRule("anthropic", "anthropic")
GEMINI = ImageRule("gemini", "gemini")
CONSERVATIVE = ImageRule("conservative", "conservative")

_MINI_4O = ImageRule("openai-4o-mini", "tiles", 2833, 5667)
_PATCH_162 = ImageRule("openai-patch-1.62", "patches", 0, 1.62)
_PATCH_246 = ImageRule("openai-patch-2.46", "patches", 0, 2.46)
_PATCH_172 = ImageRule("openai-patch-1.72", "patches", 0, 1.72)
_O_SERIES = ImageRule("openai-o", "tiles", 75, 150)
_CUA = ImageRule("openai-cua", "tiles", 65, 129)

#: (pattern matched at the start of the routed name, rule); the first match wins.
_MODEL_RULES: tuple[tuple[re.Pattern[str], ImageRule], ...] = tuple(
    (re.compile(pattern), rule)
    for pattern, rule in (
        (r"(?:gpt-4o-mini|chatgpt-4o-mini)(?:$|-)", _MINI_4O),
        (r"(?:gpt-4\.1-mini|gpt-5(?:\.\d+)?-mini)(?:$|-)", _PATCH_162),
        (r"(?:gpt-4\.1-nano|gpt-5(?:\.\d+)?-nano)(?:$|-)", _PATCH_246),
        (r"o4-mini(?:$|-)", _PATCH_172),
        (r"(?:o1|o3)(?:$|-(?!mini))", _O_SERIES),
        (r"computer-use", _CUA),
        (r"(?:gpt-|chatgpt-|o\d)", OPENAI_TILES),
        (r"claude", ANTHROPIC),
        (r"gemini", GEMINI),
    )
)
_TOKENIZER_RULES = {"o200k_base": OPENAI_TILES, "cl100k_base": OPENAI_TILES, "gemini": GEMINI}


def image_rule_for(model: str | None, tokenizer: str) -> ImageRule:
    """The image rule for ``model`` (by name), else for its tokenizer family."""
    if model:
        routed = route_name(model)
        for pattern, rule in _MODEL_RULES:
            if pattern.match(routed):
                return rule
    if tokenizer.startswith("claude"):
        return ANTHROPIC
    return _TOKENIZER_RULES.get(tokenizer, CONSERVATIVE)


def image_detail(data: Mapping[str, object]) -> str | None:
    """The ``detail`` of an image part (OpenAI's ``low`` / ``high`` / ``auto``), if given."""
    image = data.get("image_url")
    detail = image.get("detail") if isinstance(image, Mapping) else data.get("detail")
    return detail if isinstance(detail, str) else None


def _inline_base64(data: Mapping[str, object]) -> str | None:
    """The base64 payload of an image part, in any of the shapes frameworks use, if inline."""
    image = data.get("image_url")
    source = data.get("source")
    source = source if isinstance(source, Mapping) else {}
    urls = (image.get("url") if isinstance(image, Mapping) else image, data.get("url"))
    for value in (*urls, source.get("url")):
        if isinstance(value, str) and value.startswith("data:"):
            head, comma, payload = value.partition(",")
            return payload if comma and head.endswith(";base64") else None
    for value in (source.get("data"), data.get("base64"), data.get("data"), data.get("image")):
        if isinstance(value, str) and value:
            return value
    return None


def image_size(data: Mapping[str, object]) -> tuple[int, int] | None:
    """``(width, height)`` read from an image part's inline data header, else ``None``."""
    payload = _inline_base64(data)
    if payload is None:
        return None
    chunk = payload[: _HEADER_BYTES * 4 // 3].strip()
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        raw = base64.b64decode(chunk, validate=False)
    except (binascii.Error, ValueError):
        return None
    return header_size(raw)


def header_size(raw: bytes) -> tuple[int, int] | None:
    """``(width, height)`` from the first bytes of a PNG, JPEG, GIF or WebP file."""
    try:
        if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR":
            width, height = struct.unpack(">II", raw[16:24])
            return width, height
        if raw[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", raw[6:10])
            return width, height
        if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
            return _webp(raw)
        if raw[:2] == b"\xff\xd8":
            return _jpeg(raw)
    except struct.error:
        return None
    return None


def _webp(raw: bytes) -> tuple[int, int] | None:
    kind = raw[12:16]
    if kind == b"VP8 ":
        width, height = struct.unpack("<HH", raw[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if kind == b"VP8L":
        bits = int.from_bytes(raw[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if kind == b"VP8X":
        width = int.from_bytes(raw[24:27], "little") + 1
        height = int.from_bytes(raw[27:30], "little") + 1
        return width, height
    return None


_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def _jpeg(raw: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 4 <= len(raw):
        if raw[i] != 0xFF:
            return None
        marker = raw[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            i += 2
            continue
        (length,) = struct.unpack(">H", raw[i + 2 : i + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", raw[i + 5 : i + 9])
            return width, height
        i += 2 + length
    return None
