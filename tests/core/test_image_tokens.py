"""Image costs per model family, checked against the providers' published examples, and image
sizes read from real file headers (made here with the standard library)."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from session_migrator import ContentPart, Message, counter_for, plan
from session_migrator.counting._image_tokens import (
    ANTHROPIC,
    GEMINI,
    OPENAI_TILES,
    header_size,
    image_rule_for,
    image_size,
)


def png(width: int, height: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    exif = b"\xff\xe1" + struct.pack(">H", 2 + 3000) + b"\x00" * 3000  # a long segment first
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + exif + sof + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def webp(width: int, height: int, kind: str) -> bytes:
    if kind == "VP8X":
        body = b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little")
        body += (height - 1).to_bytes(3, "little")
    elif kind == "VP8L":
        bits = (width - 1) | ((height - 1) << 14)
        body = b"\x2f" + bits.to_bytes(4, "little")
    else:
        body = b"\x00" * 3 + b"\x9d\x01\x2a" + struct.pack("<HH", width, height)
    chunk = kind.encode().ljust(4) + struct.pack("<I", len(body)) + body
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def data_url(raw: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64,{base64.b64encode(raw).decode()}"


@pytest.mark.parametrize(
    "raw",
    [
        png(1024, 768),
        jpeg(1024, 768),
        gif(1024, 768),
        webp(1024, 768, "VP8X"),
        webp(1024, 768, "VP8L"),
        webp(1024, 768, "VP8 "),
    ],
)
def test_the_size_is_read_from_each_format_header(raw: bytes) -> None:
    assert header_size(raw) == (1024, 768)


def test_the_size_is_read_from_every_shape_of_inline_data() -> None:
    raw = png(640, 480)
    b64 = base64.b64encode(raw).decode()
    shapes = [
        {"type": "image_url", "image_url": {"url": data_url(raw)}},  # OpenAI chat
        {"type": "input_image", "image_url": data_url(raw)},  # OpenAI responses
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}},
        {"type": "image", "base64": b64, "mime_type": "image/png"},  # LangChain v1
        {"type": "image", "source_type": "base64", "data": b64},  # LangChain v0
    ]
    for shape in shapes:
        assert image_size(shape) == (640, 480), shape
    assert image_size({"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}) is None
    assert image_size({"type": "image", "base64": "not an image"}) is None


def test_openai_tiles_match_the_published_examples() -> None:
    assert OPENAI_TILES.tokens(1024, 1024, "high") == 765  # 4 tiles
    assert OPENAI_TILES.tokens(2048, 4096, "high") == 1105  # 1024x2048 -> 768x1536: 6 tiles
    assert OPENAI_TILES.tokens(4096, 8192, "low") == 85
    assert OPENAI_TILES.tokens(None, None, "high") == 85 + 8 * 170  # the most tiles (768x2048)
    mini = image_rule_for("gpt-4o-mini-2024-07-18", "o200k_base")
    assert mini.tokens(512, 512, "low") == 2833
    assert mini.tokens(1024, 1024, "high") == 2833 + 4 * 5667


def test_openai_patches_match_the_published_examples() -> None:
    mini = image_rule_for("gpt-4.1-mini", "o200k_base")
    nano = image_rule_for("openai/gpt-4.1-nano", "o200k_base")
    o4 = image_rule_for("o4-mini", "o200k_base")
    # 1024x1024: 32x32 patches = 1024, times the model's multiplier
    assert mini.tokens(1024, 1024, None) == 1659  # ceil(1024 x 1.62)
    assert nano.tokens(1024, 1024, None) == 2520  # ceil(1024 x 2.46)
    assert o4.tokens(1024, 1024, "low") == 1762  # detail does not change a patch model
    # 1800x2400: 4,275 patches, scaled down to 1,452 (OpenAI's example)
    assert mini.tokens(1800, 2400, None) == 2353  # ceil(1452 x 1.62)
    assert mini.tokens(None, None, None) == 2489  # the cap, 1536 x 1.62


def test_anthropic_and_gemini_rules() -> None:
    assert ANTHROPIC.tokens(1092, 1092, None) == 1590  # Anthropic's table: 1:1 at ~1,590
    assert ANTHROPIC.tokens(200, 200, None) == 54
    assert ANTHROPIC.tokens(4000, 3000, None) == 1600  # scaled to 1568 long edge, capped
    assert ANTHROPIC.tokens(None, None, None) == 1600
    assert GEMINI.tokens(384, 300, None) == 258
    assert GEMINI.tokens(1024, 1024, None) == 4 * 258
    assert image_rule_for("claude-sonnet-4-5", "claude") is ANTHROPIC
    assert image_rule_for("models/gemini-2.5-pro", "gemini") is GEMINI


def test_an_image_costs_what_the_target_model_bills_and_is_not_exact() -> None:
    """Issue 24: 100 low-detail images to gpt-4o-mini counted 9,203 tokens, OpenAI bills ~284k."""
    image = ContentPart(
        "image", None, {"type": "image_url", "image_url": {"url": data_url(png(512, 512))}}
    )
    low = ContentPart(
        "image",
        None,
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png", "detail": "low"}},
    )
    messages = [Message("user", (ContentPart("text", "what is this?"), low)) for _ in range(100)]
    p = plan(messages, "gpt-4o-mini")
    assert p.tokens > 283_300  # 100 x 2,833
    assert p.exact is False
    assert plan(messages, "gpt-4o").tokens < 20_000  # 100 x 85 plus the text
    one = [Message("user", (ContentPart("text", "hi"), image))]
    claude = counter_for("claude", model="claude-sonnet-4-5")
    text_only = claude.count_messages([Message("user", "hi")])
    assert claude.count_messages(one) - text_only == 350  # ceil(512 x 512 / 750), not scaled
    assert plan([Message("user", "hi")], "gpt-4o").exact is True
