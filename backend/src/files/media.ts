import { ERROR_CODE, FileError } from '../errors.ts';

/** The kinds of attachment Stepwise reads as more than bytes: PDFs (as text) and images (shown to a vision model). */
export type MediaKind = 'pdf' | ImageKind;
export type ImageKind = 'png' | 'jpeg' | 'webp' | 'gif';

const BY_EXTENSION: Record<string, MediaKind> = {
  pdf: 'pdf',
  png: 'png',
  jpg: 'jpeg',
  jpeg: 'jpeg',
  webp: 'webp',
  gif: 'gif',
};

/** The media type each image kind is sent to a model as. */
export const IMAGE_MEDIA_TYPE: Record<ImageKind, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif' };

/** The kind a file's name says it is (its extension, in any case), or undefined for any other file. */
export function mediaKind(name: string): MediaKind | undefined {
  const extension = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  return extension === undefined ? undefined : BY_EXTENSION[extension];
}

/** True for the image kinds (not PDFs). */
export function isImageKind(kind: MediaKind | undefined): kind is ImageKind {
  return kind !== undefined && kind !== 'pdf';
}

/**
 * The width and height an image's header declares, read from its first bytes without decoding
 * it; throws invalid_image when the bytes are not an image of `kind` (a renamed file, a cut
 * header). Decoding is left to the resize, which runs only for images under the pixel limit.
 */
export function imageSize(kind: ImageKind, bytes: Uint8Array, name: string): { width: number; height: number } {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const wrong = () => new FileError(ERROR_CODE.invalidImage, `"${name}" is not a ${kind.toUpperCase()} image (its bytes do not match its name)`);
  switch (kind) {
    case 'png': {
      if (view.length < 24 || view.toString('latin1', 0, 8) !== '\x89PNG\r\n\x1a\n' || view.toString('latin1', 12, 16) !== 'IHDR') throw wrong();
      return { width: view.readUInt32BE(16), height: view.readUInt32BE(20) };
    }
    case 'gif': {
      if (view.length < 10 || !/^GIF8[79]a$/.test(view.toString('latin1', 0, 6))) throw wrong();
      return { width: view.readUInt16LE(6), height: view.readUInt16LE(8) };
    }
    case 'webp': {
      if (view.length < 30 || view.toString('latin1', 0, 4) !== 'RIFF' || view.toString('latin1', 8, 12) !== 'WEBP') throw wrong();
      const chunk = view.toString('latin1', 12, 16);
      if (chunk === 'VP8X') return { width: 1 + view.readUIntLE(24, 3), height: 1 + view.readUIntLE(27, 3) };
      if (chunk === 'VP8L') {
        const bits = view.readUInt32LE(21);
        return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
      }
      if (chunk === 'VP8 ') return { width: view.readUInt16LE(26) & 0x3fff, height: view.readUInt16LE(28) & 0x3fff };
      throw wrong();
    }
    case 'jpeg': {
      if (view.length < 4 || view[0] !== 0xff || view[1] !== 0xd8) throw wrong();
      // Walks the segments to the first start-of-frame marker, which holds the size.
      let offset = 2;
      while (offset + 9 < view.length) {
        if (view[offset] !== 0xff) throw wrong();
        const marker = view[offset + 1]!;
        if (marker === 0xff) {
          offset++;
          continue;
        }
        const length = view.readUInt16BE(offset + 2);
        const startOfFrame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
        if (startOfFrame) return { width: view.readUInt16BE(offset + 7), height: view.readUInt16BE(offset + 5) };
        offset += 2 + length;
      }
      throw wrong();
    }
    default: {
      const never: never = kind;
      throw new Error(`Unknown image kind ${String(never)}`);
    }
  }
}

/** Refuses an image whose header is not its kind's, that has no pixels, or that holds more than `maxPixels`. */
export function checkImage(kind: ImageKind, bytes: Uint8Array, name: string, maxPixels: number): { width: number; height: number } {
  const size = imageSize(kind, bytes, name);
  if (size.width < 1 || size.height < 1) throw new FileError(ERROR_CODE.invalidImage, `"${name}" declares no pixels (${size.width}×${size.height})`);
  if (size.width * size.height > maxPixels) {
    throw new FileError(
      ERROR_CODE.invalidImage,
      `"${name}" is ${size.width}×${size.height} pixels; images are limited to ${maxPixels.toLocaleString('en-US')} pixels (IMAGE_MAX_PIXELS)`,
    );
  }
  return size;
}
