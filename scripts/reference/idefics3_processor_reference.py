"""The Idefics3 / SmolVLM image processor and prompt expansion, in plain PIL + numpy (Debian has no
transformers), written from the semantics of transformers' image_processing_idefics3.py (the PIL path)
and processing_idefics3.py:

  resize so the longest edge is size.longest_edge (other edge int(longest / aspect), made even, capped
  at 4096) → with do_image_splitting: resize both edges up to multiples of max_image_size.longest_edge S,
  cut S×S tiles row by row and append the whole image resized to S×S (rows = cols = 0 when it is one
  S×S frame); without: resize to S×S → convert_to_rgb (alpha composited onto white) → rescale
  (float64 product cast to float32) → normalise ((x − mean) / std in float32) → channels first.
  Every resize is PIL's Image.resize with the configured filter (LANCZOS by default).

It writes deterministic test images (PNG, a few KB; one RGBA, one JPEG) and the expected results to
test/fixtures/idefics3-processor/: a sha256 of every float32 pixel value, sums, selected values, the
tile grid, PIL resizes of a random image with three filters, and an expanded prompt.
src/model/vision/image-processor.test.ts must match it. Run:
  /usr/bin/python3 scripts/reference/idefics3_processor_reference.py
Not shipped, not imported by the library.
"""
import base64
import hashlib
import json
import math
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "../../test/fixtures/idefics3-processor"))
MAX_IMAGE_SIZE = 4096


def longest_edge_size(height, width, longest):
    """_resize_output_size_rescale_to_max_len (min_len 1), then _resize_output_size_scale_below_upper_bound."""
    aspect = width / height
    if width >= height:
        width = longest
        height = int(width / aspect)
        if height % 2 != 0:
            height += 1
    else:
        height = longest
        width = int(height * aspect)
        if width % 2 != 0:
            width += 1
    height, width = max(height, 1), max(width, 1)
    aspect = width / height
    if width >= height and width > MAX_IMAGE_SIZE:
        width, height = MAX_IMAGE_SIZE, int(MAX_IMAGE_SIZE / aspect)
    elif height > width and height > MAX_IMAGE_SIZE:
        height, width = MAX_IMAGE_SIZE, int(MAX_IMAGE_SIZE * aspect)
    return max(height, 1), max(width, 1)


def vision_encoder_size(height, width, tile):
    """resize_for_vision_encoder: both edges up to multiples of the tile side, aspect kept."""
    aspect = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = math.ceil(int(width / aspect) / tile) * tile
    else:
        height = math.ceil(height / tile) * tile
        width = math.ceil(int(height * aspect) / tile) * tile
    return height, width


def resize(array, height, width, resample):
    """HF's resize: the numpy array (RGB or RGBA uint8) through a PIL image and Image.resize((w, h))."""
    return np.array(Image.fromarray(array).resize((width, height), resample=resample))


def split_image(array, tile, resample):
    height, width = array.shape[:2]
    if height <= tile and width <= tile:
        return [array], 0, 0
    rows, cols = math.ceil(height / tile), math.ceil(width / tile)
    tile_h, tile_w = math.ceil(height / rows), math.ceil(width / cols)
    frames = []
    for r in range(rows):
        for c in range(cols):
            frames.append(array[r * tile_h:min((r + 1) * tile_h, height), c * tile_w:min((c + 1) * tile_w, width)])
    frames.append(resize(array, tile, tile, resample))
    return frames, rows, cols


def convert_to_rgb(array):
    rgba = Image.fromarray(array).convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255))
    return np.array(Image.alpha_composite(background, rgba).convert("RGB"))


def preprocess(image, config):
    """One PIL image → (uint8 frames after convert_to_rgb, float32 [frames, 3, S, S], rows, cols)."""
    resample = config.get("resample", 1)
    tile = config["max_image_size"]["longest_edge"]
    array = np.array(image)
    if config.get("do_resize", True):
        array = resize(array, *longest_edge_size(*array.shape[:2], config["size"]["longest_edge"]), resample)
    if config.get("do_image_splitting", True):
        array = resize(array, *vision_encoder_size(*array.shape[:2], tile), resample)
        frames, rows, cols = split_image(array, tile, resample)
    else:
        frames, rows, cols = [resize(array, tile, tile, resample)], 0, 0
    frames = [convert_to_rgb(frame) for frame in frames]
    values = []
    mean = np.array(config.get("image_mean", [0.5] * 3), dtype=np.float32)
    std = np.array(config.get("image_std", [0.5] * 3), dtype=np.float32)
    for frame in frames:
        x = (frame.astype(np.float64) * config.get("rescale_factor", 1 / 255)).astype(np.float32)
        x = (x - mean) / std
        values.append(x.transpose(2, 0, 1))
    return np.stack(frames), np.ascontiguousarray(np.stack(values), dtype="<f4"), rows, cols


def prompt_string(rows, cols, seq_len, image="<image>", fake="<fake_token_around_image>", glob="<global-img>"):
    """get_image_prompt_string of processing_idefics3.py."""
    single = f"{fake}{glob}{image * seq_len}{fake}"
    if rows == 0 and cols == 0:
        return single
    text = ""
    for r in range(rows):
        for c in range(cols):
            text += f"{fake}<row_{r + 1}_col_{c + 1}>{image * seq_len}"
        text += "\n"
    return text + "\n" + single


def expand_prompt(text, layouts, seq_len):
    pieces = text.split("<image>")
    assert len(pieces) - 1 == len(layouts)
    out = pieces[0]
    for index, (rows, cols) in enumerate(layouts):
        out += prompt_string(rows, cols, seq_len) + pieces[index + 1]
    return out


def make_images():
    """Deterministic pictures: gradients with shapes (compress to a few KB as PNG), one with transparency."""
    os.makedirs(OUT, exist_ok=True)

    def picture(width, height, seed):
        y, x = np.mgrid[0:height, 0:width]
        image = np.zeros((height, width, 3), dtype=np.uint8)
        image[..., 0] = (x * 255 // (width - 1)).astype(np.uint8)
        image[..., 1] = (y * 255 // (height - 1)).astype(np.uint8)
        image[..., 2] = 96
        rng = np.random.default_rng(seed)
        for _ in range(4):
            cx, cy, r = rng.integers(0, width), rng.integers(0, height), rng.integers(4, max(5, height // 4))
            colour = rng.integers(0, 256, 3)
            if rng.random() < 0.5:
                image[(x - cx) ** 2 + (y - cy) ** 2 <= r * r] = colour
            else:
                image[max(cy - r, 0):cy + r, max(cx - r, 0):cx + r] = colour
        return image

    Image.fromarray(picture(50, 37, 1)).save(os.path.join(OUT, "small.png"), optimize=True)
    Image.fromarray(picture(300, 200, 2)).save(os.path.join(OUT, "wide.png"), optimize=True)
    Image.fromarray(picture(90, 160, 3)).save(os.path.join(OUT, "tall.jpg"), quality=90)
    rgba = np.dstack([picture(120, 90, 4), np.zeros((90, 120), dtype=np.uint8)])
    y, x = np.mgrid[0:90, 0:120]
    rgba[..., 3] = np.clip(255 - np.hypot(x - 60, y - 45) * 4, 0, 255).astype(np.uint8)  # opaque centre, soft edge
    Image.fromarray(rgba, "RGBA").save(os.path.join(OUT, "transparent.png"), optimize=True)


def digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def case(name, file, config):
    image = Image.open(os.path.join(OUT, file))
    image.load()
    _, values, rows, cols = preprocess(image, config)
    flat = values.reshape(-1)
    picks = sorted({int(i) for i in np.linspace(0, flat.size - 1, 41)} | {int(flat.argmax()), int(flat.argmin())})
    result = {
        "name": name, "file": file, "config": config, "rows": rows, "cols": cols,
        "imageCount": int(values.shape[0]), "size": int(values.shape[-1]),
        "decodedSha256": digest(np.array(image.convert("RGB"))) if image.mode == "RGB" else None,
        "sha256": digest(values), "sum": float(values.astype(np.float64).sum()),
        "selected": [[i, float(flat[i])] for i in picks],
    }
    return result


def resize_cases():
    rng = np.random.default_rng(7)
    source = rng.integers(0, 256, (23, 31, 3), dtype=np.uint8)
    cases = []
    for out_w, out_h, resample in [(100, 61, 1), (7, 5, 1), (31, 64, 3), (12, 40, 2), (64, 9, 1)]:
        out = resize(source, out_h, out_w, resample)
        cases.append({"outWidth": out_w, "outHeight": out_h, "filter": resample, "sha256": digest(out),
                      "first": out.reshape(-1)[:12].tolist()})
    return {"width": 31, "height": 23, "inputBase64": base64.b64encode(source.tobytes()).decode(), "cases": cases}


def main():
    make_images()
    small_tiles = {"size": {"longest_edge": 64}, "max_image_size": {"longest_edge": 64}}
    tiled = {"size": {"longest_edge": 160}, "max_image_size": {"longest_edge": 64}}
    smolvlm = {"size": {"longest_edge": 2048}, "max_image_size": {"longest_edge": 512}, "resample": 1,
               "do_image_splitting": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    imagenet = {"size": {"longest_edge": 96}, "max_image_size": {"longest_edge": 48}, "do_image_splitting": False,
                "resample": 3, "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}
    cases = [
        case("small image, one frame", "small.png", small_tiles),
        case("wide image, 2 × 3 tiles + global", "wide.png", tiled),
        case("wide image, SmolVLM-256M settings", "wide.png", smolvlm),
        case("tall JPEG, no splitting, bicubic, ImageNet mean/std", "tall.jpg", imagenet),
        case("transparent image: resized as RGBA, composited onto white per frame", "transparent.png", tiled),
    ]
    text = "<|im_start|>User:<image>How many shapes?<image>Which is wider?<end_of_utterance>\nAssistant:"
    layouts = [[cases[0]["rows"], cases[0]["cols"]], [cases[1]["rows"], cases[1]["cols"]]]
    reference = {
        "cases": cases,
        "resize": resize_cases(),
        "prompt": {"text": text, "layouts": layouts, "imageSeqLen": 4, "expanded": expand_prompt(text, layouts, 4)},
    }
    with open(os.path.join(OUT, "reference.json"), "w") as handle:
        json.dump(reference, handle, indent=1)
        handle.write("\n")
    for item in cases:
        print(f"{item['name']}: {item['imageCount']} frames of {item['size']}, rows {item['rows']} cols {item['cols']}")


if __name__ == "__main__":
    main()
