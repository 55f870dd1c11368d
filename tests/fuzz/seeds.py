#!/usr/bin/env python3
"""Writes the binary seeds of the compose and png targets (corpus/compose,
corpus/png); the config and panel seeds are text, written by hand. The input
formats are described at the top of fuzz-compose.c and fuzz-png.c.

    python3 tests/fuzz/seeds.py        # rewrites the generated seeds
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# Index of each format in render/format.c's table; the first 12 are the
# 32-bit ones, which is also the dst format index.
FORMATS = ['XRGB8888', 'ARGB8888', 'XBGR8888', 'ABGR8888', 'RGBX8888', 'RGBA8888',
           'BGRX8888', 'BGRA8888', 'XRGB2101010', 'ARGB2101010', 'XBGR2101010',
           'ABGR2101010', 'RGB565', 'BGR565']
ONE = 1 << 16


def layer(fmt, fb, src, dst, pad=0):
    """fb (w, h); src (x, y, w, h) in 16.16; dst (x, y, w, h)."""
    (fw, fh), (sx, sy, sw, sh), (dx, dy, dw, dh) = fb, src, dst
    return struct.pack('<BHHBIIIIhHhH', FORMATS.index(fmt), fw - 1, fh - 1, pad,
                       sw - 1, sx, sh - 1, sy, dx, dw - 1, dy, dh - 1)


def whole(fmt, w, h, x, y, dw=None, dh=None, pad=0):
    return layer(fmt, (w, h), (0, 0, w * ONE, h * ONE), (x, y, dw or w, dh or h), pad)


def compose(dst_fmt, w, h, layers, pixels=b'', invalid=None):
    flags = len(layers)
    extra = b''
    if invalid is not None:
        bad, kind = invalid
        flags |= 0x80 | bad << 4
        extra = bytes([kind])
    return (struct.pack('<BBBB', FORMATS.index(dst_fmt), w - 1, h - 1, flags) + extra +
            b''.join(layers) + pixels)


# Premultiplied-ish bytes with every alpha class: 0, partial, opaque.
PIXELS = bytes([0x10, 0x20, 0x30, 0xff, 0x40, 0x00, 0x80, 0x80, 0x00, 0x00, 0x00, 0x00,
                0x33, 0x33, 0x00, 0x33, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x7f])


def compose_seeds():
    s = {}
    for fmt in ['XRGB8888', 'ARGB8888', 'ABGR2101010']:
        s['no-layers-dst-' + fmt] = compose(fmt, 16, 16, [])
    for fmt in FORMATS:
        s['identity-' + fmt] = compose('XRGB8888', 32, 32, [whole(fmt, 8, 8, 4, 4)], PIXELS)
    s['dst-argb-over-alpha-layers'] = compose('ARGB8888', 32, 32, [
        whole('XRGB8888', 32, 32, 0, 0), whole('ARGB8888', 8, 8, 4, 4),
        whole('ABGR2101010', 8, 8, 8, 8)], PIXELS)
    s['scale-up-8x'] = compose('XRGB8888', 32, 32, [whole('XRGB8888', 4, 4, 0, 0, 32, 32)],
                               PIXELS)
    s['scale-down-4x'] = compose('XRGB8888', 16, 16,
                                 [whole('ARGB8888', 64, 64, 0, 0, 16, 16)], PIXELS)
    s['scale-non-uniform'] = compose('XRGB8888', 40, 20, [
        layer('RGB565', (7, 3), (0, 0, 7 * ONE, 3 * ONE), (1, 1, 38, 5))], PIXELS)
    s['fractional-crop'] = compose('XRGB8888', 20, 20, [
        layer('XRGB8888', (8, 8), (ONE + ONE // 2, ONE // 3, 2 * ONE + ONE // 4, 5 * ONE),
              (0, 0, 20, 20))], PIXELS)
    s['crop-last-pixel'] = compose('XRGB8888', 16, 16, [
        layer('XRGB8888', (8, 8), (7 * ONE, 7 * ONE, ONE, ONE), (2, 2, 12, 12))], PIXELS)
    s['clipped-negative'] = compose('XRGB8888', 32, 32,
                                    [whole('XRGB8888', 40, 40, -10, -10)], PIXELS)
    s['clipped-right-bottom'] = compose('XRGB8888', 32, 32,
                                        [whole('BGRA8888', 16, 16, 24, 28, 32, 32)], PIXELS)
    s['far-coordinates'] = compose('XRGB8888', 64, 64, [
        whole('XRGB8888', 4, 4, 32766, 32766, 1, 1),
        whole('XRGB8888', 4, 4, -32767, -32767, 32767, 32767)], PIXELS)
    s['wide-fb-32766'] = compose('XRGB8888', 64, 2, [
        layer('XRGB8888', (32766, 2), (32700 * ONE, 0, 66 * ONE, 2 * ONE), (0, 0, 64, 2))],
        PIXELS)
    s['tall-fb-32766'] = compose('XRGB8888', 2, 64, [
        layer('RGB565', (1, 32766), (0, 16000 * ONE, ONE, 64 * ONE), (0, 0, 2, 64))], PIXELS)
    s['four-layers-z-order'] = compose('XRGB8888', 48, 48, [
        whole('XRGB8888', 48, 48, 0, 0), whole('ARGB8888', 16, 16, 8, 8),
        whole('RGB565', 16, 16, 16, 16), whole('ABGR8888', 32, 4, 4, 20, 40, 8)], PIXELS)
    s['stride-padding'] = compose('XRGB8888', 16, 16, [
        whole('RGB565', 5, 5, 1, 1, pad=3), whole('ARGB2101010', 3, 7, 8, 2, pad=1)], PIXELS)
    # 32768x magnification is the most the composer's 16.16 scale resolves.
    s['magnify-32768x'] = compose('XRGB8888', 64, 1, [
        layer('XRGB8888', (4, 4), (ONE, ONE, 128, ONE), (0, 0, 64, 1))], PIXELS)
    s['minify-to-one-pixel'] = compose('XRGB8888', 4, 4, [
        layer('XRGB8888', (16385, 8), (0, 0, 16385 * ONE, 8 * ONE), (1, 1, 1, 1))], PIXELS)
    for kind, name in enumerate(['src-outside-fb', 'empty-src', 'dst-over-32767',
                                 'stride-not-word', 'unknown-format']):
        s['invalid-' + name] = compose('XRGB8888', 16, 16, [
            whole('XRGB8888', 8, 8, 0, 0), whole('ARGB8888', 4, 4, 2, 2)], PIXELS, (1, kind))
    # Known bug: src_w of 1 (1/65536 px) onto 100 px, more than 32768x, rounds
    # the scale to 0 and samples the pixel before the crop.
    s['repro-magnify-beyond-32768x'] = compose('XRGB8888', 64, 1, [
        layer('XRGB8888', (4, 4), (ONE, ONE, 1, ONE), (0, 0, 100, 1))], PIXELS)
    # Found by this target: pixman refuses to sample an image 32767 pixels
    # wide or tall, which the composer accepts, so the layer is not drawn.
    s['repro-fb-32767-draws-nothing'] = compose('XRGB8888', 64, 1, [
        layer('XRGB8888', (32767, 1), (0, 0, 64 * ONE, ONE), (0, 0, 64, 1))], PIXELS)
    # Found by this target too: pixman skips a composite whose source extents,
    # widened by half a scale step, leave 16.16 (src_x + src_w + scale / 2
    # reaching 32768 px), so this accepted layer is drawn as nothing at all.
    s['repro-minify-wide-fb-draws-nothing'] = compose('XRGB8888', 4, 1, [
        layer('XRGB8888', (30000, 1), (0, 0, 30000 * ONE, ONE), (0, 0, 1, 1))], PIXELS)
    return s


def chunk(kind, data):
    body = kind + data
    return struct.pack('>I', len(data)) + body + struct.pack('>I', zlib.crc32(body))


def png(w, h, depth, colour, rows, extra=(), interlace=0):
    ihdr = struct.pack('>IIBBBBB', w, h, depth, colour, 0, 0, interlace)
    raw = b''.join(b'\0' + r for r in rows)
    out = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', ihdr)
    for kind, data in extra:
        out += chunk(kind, data)
    return out + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')


def adam7(w, h, bpp, pixel):
    """Rows of an interlaced image, pass by pass; pixel(x, y) gives its bytes."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
              (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = []
    for x0, y0, dx, dy in passes:
        if x0 >= w or y0 >= h:
            continue
        for y in range(y0, h, dy):
            rows.append(b''.join(pixel(x, y) for x in range(x0, w, dx)))
    return rows


def png_seeds():
    s = {}
    s['rgb8'] = png(2, 2, 8, 2, [b'\xff\x00\x00\x00\xff\x00', b'\x00\x00\xff\x80\x80\x80'])
    s['rgba8-alpha-classes'] = png(4, 1, 8, 6, [
        b'\xff\x80\x40\x00' + b'\xff\x80\x40\x80' + b'\xff\x80\x40\xff' + b'\x01\x02\x03\x01'])
    s['grey8'] = png(1, 2, 8, 0, [b'\x00', b'\xc8'])
    s['grey1-bits'] = png(9, 1, 1, 0, [b'\xa5\x80'])
    s['grey-alpha8'] = png(2, 1, 8, 4, [b'\x80\x80\xff\x00'])
    plte = (b'PLTE', b'\xff\x00\x00\x00\xff\x00\x00\x00\xff')
    s['palette'] = png(3, 1, 8, 3, [b'\x00\x01\x02'], [plte])
    s['palette-trns'] = png(3, 1, 8, 3, [b'\x00\x01\x02'], [plte, (b'tRNS', b'\x00\x80')])
    s['palette-4bit'] = png(5, 1, 4, 3, [b'\x01\x20\x10'], [plte])
    s['rgb-trns'] = png(2, 1, 8, 2, [b'\x10\x20\x30\x40\x50\x60'],
                        [(b'tRNS', b'\x00\x10\x00\x20\x00\x30')])
    s['rgba16'] = png(2, 1, 16, 6, [b'\xff\xff\x80\x00\x00\x00\x80\x00' * 2])
    s['gamma-rgb'] = png(2, 1, 8, 2, [b'\x80\x80\x80\x40\x40\x40'],
                         [(b'gAMA', struct.pack('>I', 100000))])
    s['interlaced-rgba-9x9'] = png(9, 9, 8, 6, adam7(
        9, 9, 4, lambda x, y: bytes([x * 28, y * 28, (x + y) * 14, 0x40 + x * 20])),
        interlace=1)
    s['wide-rgb-2000x1'] = png(2000, 1, 8, 2, [bytes(range(256)) * 23 + b'\x00' * 112])
    good = png(2, 2, 8, 2, [b'\x01\x02\x03\x04\x05\x06', b'\x07\x08\x09\x0a\x0b\x0c'])
    s['truncated-idat'] = good[:-20]
    s['bad-crc'] = good[:29] + b'\x00\x00\x00\x00' + good[33:]
    s['no-idat'] = good[:33] + chunk(b'IEND', b'')
    s['too-wide-16385'] = png(16385, 1, 8, 0, [b'\x00' * 16385])
    s['zero-width'] = png(0, 1, 8, 0, [b''])
    s['not-a-png'] = b'GIF89a this is not a PNG file\n'
    s['empty'] = b''
    s['write-xrgb-4x4'] = b'w\x03\x03\x00' + bytes(range(64))
    s['write-argb-3x3-padded'] = b'w\x02\x02\x05' + bytes(range(0, 255, 7))
    s['write-64x64'] = b'w\x3f\x3f\x06' + bytes(range(256))
    return s


def write(target, seeds):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    write('compose', compose_seeds())
    write('png', png_seeds())
