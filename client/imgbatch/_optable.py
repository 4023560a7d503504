"""The op table, generated from worker/ops/ops.def by tools/optable.py: do not
edit (`python3 tools/optable.py --write` rewrites it; ctest optable/check
fails when it is stale). docs/ops.md explains the columns."""

from typing import NamedTuple, Optional, Tuple

MODES = ("L", "LA", "RGB", "RGBA", "CMYK", "RGBX")


class Step(NamedTuple):
    name: str
    syntax: str
    call: str


class Op(NamedTuple):
    field: str
    inputs: int
    modes: Tuple[str, ...]
    pillow: str
    note: str
    steps: Tuple[Step, ...]
    sample: Optional[str]
    edge_ok: Tuple[str, ...]
    edge_bad: Tuple[str, ...]


OPS: Tuple[Op, ...] = (
    Op(
        'source', 0, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.open / Image.new / Image.frombytes',
        ' (palette PNG/GIF decode to RGB, or RGBA with transparency)',
        (),
        None,
        (),
        (),
    ),
    Op(
        'copy', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.copy(), ImageChops.duplicate',
        '',
        (
            Step('copy', 'copy', '.copy'),
        ),
        '',
        (),
        (),
    ),
    Op(
        'transpose', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.transpose(method) (all 7), ImageOps.flip / mirror',
        '',
        (
            Step('transpose', 'transpose(METHOD)', '_transpose'),
            Step('flip', 'flip', 'ImageOps.flip'),
            Step('mirror', 'mirror', 'ImageOps.mirror'),
        ),
        'method: ROTATE_90',
        ('method: TRANSVERSE',),
        ('method: 7',),
    ),
    Op(
        'crop', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.crop(box) (outside the image = 0)',
        '',
        (
            Step('crop', 'crop(left, top, right, bottom)', '_crop'),
        ),
        'left: -1 top: 2 right: 9 bottom: 8',
        ('left: 3 right: 4 bottom: 1',),
        ('left: 3 right: 2 bottom: 1',),
    ),
    Op(
        'expand', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageOps.expand(image, border, fill)',
        '',
        (
            Step('expand', 'expand(border, fill=0)', '_expand'),
        ),
        'left: 2 top: 2 right: 2 bottom: 2',
        (),
        (),
    ),
    Op(
        'resize', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.resize(size, resample, box, reducing_gap), every filter',
        ' (LA, RGBA premultiplied, as Pillow)',
        (
            Step('resize', 'resize(width, height[, FILTER], reducing_gap=g)', '_resize'),
            Step('thumbnail', 'thumbnail(width[, height])', '_thumbnail'),
        ),
        'width: 7 height: 5',
        ('width: 1 height: 1',),
        ('width: 0 height: 1',),
    ),
    Op(
        'paste', 2, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.paste(im, box) without mask',
        ' (matching modes)',
        (),
        'left: -3 top: 4',
        (),
        (),
    ),
    Op(
        'getchannel', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.getchannel(band)',
        ' -> L',
        (
            Step('getchannel', 'getchannel(BAND)', '_getchannel'),
        ),
        'band: 0',
        ('band: 2',),
        ('band: 3',),
    ),
    Op(
        'convert', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.convert(mode), ImageOps.grayscale',
        ' (between them; no matrix or dither)',
        (
            Step('convert', 'convert(MODE)', '_convert'),
            Step('grayscale', 'grayscale', 'ImageOps.grayscale'),
        ),
        'mode: "L"',
        ('mode: "RGBX"',),
        ('mode: "XYZ"',),
    ),
    Op(
        'point', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.point(lut)',
        ' (256 entries per band)',
        (),
        None,
        (),
        ('lut: 1',),
    ),
    Op(
        'invert', 1, ('L', 'RGB'),
        'ImageOps.invert',
        ' (as Pillow)',
        (
            Step('invert', 'invert', 'ImageOps.invert'),
        ),
        '',
        (),
        (),
    ),
    Op(
        'solarize', 1, ('L', 'RGB'),
        'ImageOps.solarize(image, threshold)',
        ' (as Pillow)',
        (
            Step('solarize', 'solarize(threshold=128)', 'ImageOps.solarize'),
        ),
        'threshold: 100',
        ('threshold: 4294967295',),
        (),
    ),
    Op(
        'posterize', 1, ('L', 'RGB'),
        'ImageOps.posterize(image, bits)',
        ' (as Pillow)',
        (
            Step('posterize', 'posterize(bits)', 'ImageOps.posterize'),
        ),
        'bits: 3',
        ('bits: 0', 'bits: 8'),
        ('bits: 9',),
    ),
    Op(
        'rank_filter', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageFilter.RankFilter / MedianFilter / MinFilter / MaxFilter',
        '; odd sizes 3..9',
        (
            Step('median', 'median(size=3)', 'ImageFilter.MedianFilter'),
            Step('min', 'min(size=3)', 'ImageFilter.MinFilter'),
            Step('max', 'max(size=3)', 'ImageFilter.MaxFilter'),
            Step('rank', 'rank(size, rank)', 'ImageFilter.RankFilter'),
        ),
        'size: 3 rank: 4',
        ('size: 3 rank: 8', 'size: 9 rank: 80'),
        ('size: 3 rank: 9', 'size: 4 rank: 1', 'size: 11 rank: 0'),
    ),
    Op(
        'box_blur', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageFilter.BoxBlur(radius) (x/y radii)',
        '',
        (
            Step('box_blur', 'box_blur(r[, ry])', '_box_blur'),
        ),
        'radius_x: 2 radius_y: 2',
        ('radius_x: 0 radius_y: 0',),
        ('radius_x: -1 radius_y: 0',),
    ),
    Op(
        'gaussian_blur', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageFilter.GaussianBlur(radius) (x/y radii)',
        '',
        (
            Step('gaussian_blur', 'gaussian_blur(r[, ry])', '_gaussian_blur'),
        ),
        'radius_x: 2 radius_y: 0.7',
        ('radius_x: 0 radius_y: 0',),
        ('radius_x: nan radius_y: 1',),
    ),
    Op(
        'kernel', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageFilter.Kernel((3,3)|(5,5), kernel, scale, offset) and BLUR, SHARPEN, ...',
        '; sizes 3 and 5',
        (
            Step('filter', 'filter(NAME)', '_named_filter'),
        ),
        'size: 3 kernel: [-1, -1, -1, -1, 9, -1, -1, -1, -1] scale: 1',
        ('size: 5 kernel: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] scale: 25',),
        ('size: 3 kernel: [1, 1, 1, 1, 1, 1, 1, 1] scale: 8',),
    ),
    Op(
        'chops', 2, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageChops.multiply / screen / overlay / hard_light / soft_light / difference / darker / lighter / add / subtract / add_modulo / subtract_modulo',
        ' (both inputs of one mode; output of the smaller size)',
        (),
        'function: ADD scale: 2 offset: 10',
        ('function: SUBTRACT_MODULO',),
        ('function: 12',),
    ),
    Op(
        'blend', 2, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.blend(im1, im2, alpha), ImageChops.blend',
        ' (matching modes)',
        (),
        'alpha: 0.3',
        (),
        (),
    ),
    Op(
        'constant', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageChops.constant(image, value)',
        ' -> L',
        (),
        'value: 200',
        (),
        (),
    ),
    Op(
        'enhance', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageEnhance.Brightness / Color / Contrast(image).enhance(factor)',
        '',
        (
            Step('brightness', 'brightness(f)', 'ImageEnhance.Brightness'),
            Step('color', 'color(f)', 'ImageEnhance.Color'),
            Step('contrast', 'contrast(f)', 'ImageEnhance.Contrast'),
        ),
        'kind: CONTRAST factor: 1.7',
        ('kind: CONTRAST',),
        ('kind: 3',),
    ),
    Op(
        'tone', 1, ('RGB', 'RGBA'),
        'none: imgbatch.tone (Oklab L-only exposure, contrast, highlights, shadows, whites, blacks)',
        '',
        (
            Step('tone', 'tone(exposure_ev=, contrast=, highlights=, shadows=, whites=, blacks=)', '_tone'),
        ),
        'exposure_ev: 0.5 shadows: 0.4',
        (),
        ('contrast: 1e308',),
    ),
    Op(
        'reduce', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.reduce(factor | (fx, fy), box)',
        ' (LA, RGBA premultiplied, as Pillow)',
        (
            Step('reduce', 'reduce(factor)', '.reduce'),
        ),
        'factor_x: 2 factor_y: 3',
        ('factor_x: 1 factor_y: 1',),
        ('factor_x: 0 factor_y: 1',),
    ),
    Op(
        'transform', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'Image.transform(size, Transform.AFFINE, data, resample, fillcolor), Image.rotate(angle, resample, expand, center, translate, fillcolor)',
        ' (NEAREST, BILINEAR, BICUBIC, as Pillow)',
        (
            Step('rotate', 'rotate(angle[, FILTER], expand=0)', '_rotate'),
            Step('transform', 'transform(width, height, a, b, c, d, e, f[, FILTER])', '_transform'),
        ),
        'width: 7 height: 5 matrix: [0.8, 0.6, -1.5, -0.6, 0.8, 2.25] resample: BILINEAR',
        ('width: 1 height: 1 matrix: [1, 0, 0, 0, 1, 0]', 'width: 4 height: 3 matrix: [1e9, -1e9, 0, 0, 1, -1e9] resample: BICUBIC'),
        ('width: 0 height: 1 matrix: [1, 0, 0, 0, 1, 0]', 'width: 4 height: 3 matrix: [1, 0, 0, 0, 1]', 'width: 4 height: 3 matrix: [1, 0, 0, 0, 1, 0] resample: BOX', 'width: 4 height: 3 matrix: [1, 0, 0, 0, 1, 0] method: EXTENT', 'width: 4 height: 3 matrix: [nan, 0, 0, 0, 1, 0]'),
    ),
    Op(
        'exif_transpose', 1, ('L', 'LA', 'RGB', 'RGBA', 'CMYK', 'RGBX'),
        'ImageOps.exif_transpose(image)',
        ' (input: a source node; its EXIF, else XMP, orientation)',
        (
            Step('exif_transpose', 'exif_transpose', 'ImageOps.exif_transpose'),
        ),
        '',
        (),
        (),
    ),
)
