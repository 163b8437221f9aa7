import type { Config } from '../config/config.ts';
import { ERROR_CODE, FileError } from '../errors.ts';
import type { LlmImage } from '../messages.ts';
import { IMAGE_MEDIA_TYPE, isImageKind, mediaKind } from './media.ts';
import type { SessionFiles } from './session-files.ts';

/** True when `name` is a file a vision model can be shown (PNG, JPEG, WebP, GIF, by its extension). */
export function isImageName(name: string): boolean {
  return isImageKind(mediaKind(name));
}

/**
 * The session images a message was sent with, ready for a vision model: each read (and checked as
 * at upload), and scaled down on the server, keeping its proportions, when a side is longer than
 * IMAGE_MAX_SIDE (PNG and GIF come out as PNG, JPEG as JPEG; a GIF sends its first frame). Jimp
 * does it in JavaScript: no native binary. WebP is not decoded here: one within the limit goes as
 * it is, a larger one is refused saying so.
 */
export async function loadModelImages(files: SessionFiles, sessionId: string, names: readonly string[], limits: Config['images']): Promise<LlmImage[]> {
  if (names.length > limits.maxPerMessage) {
    throw new FileError(
      ERROR_CODE.tooManyImages,
      `A message may send at most ${limits.maxPerMessage} images (IMAGE_MAX_PER_MESSAGE); it names ${names.length}`,
    );
  }
  const images: LlmImage[] = [];
  for (const name of names) {
    const image = await files.readImage(sessionId, name);
    if (Math.max(image.width, image.height) <= limits.maxSide) {
      images.push({ name: image.name, mediaType: IMAGE_MEDIA_TYPE[image.kind], data: image.bytes.toString('base64') });
      continue;
    }
    if (image.kind === 'webp') {
      throw new FileError(
        ERROR_CODE.invalidImage,
        `"${image.name}" is ${image.width}×${image.height} pixels, over IMAGE_MAX_SIDE (${limits.maxSide}), and WebP images are not scaled on the server: attach it as PNG or JPEG, or smaller`,
      );
    }
    const { Jimp } = await import('jimp');
    const decoded = await Jimp.read(image.bytes).catch((error: unknown) => {
      throw new FileError(ERROR_CODE.invalidImage, `"${image.name}" could not be decoded: ${error instanceof Error ? error.message.slice(0, 120) : 'unknown'}`);
    });
    decoded.scaleToFit({ w: limits.maxSide, h: limits.maxSide });
    const mediaType = image.kind === 'jpeg' ? 'image/jpeg' : 'image/png';
    const bytes = mediaType === 'image/jpeg' ? await decoded.getBuffer('image/jpeg', { quality: 85 }) : await decoded.getBuffer('image/png');
    images.push({ name: image.name, mediaType, data: bytes.toString('base64') });
  }
  return images;
}
