import { randomUUID } from 'node:crypto';
import { constants, createReadStream, type Dirent, type ReadStream, statSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { formatSize } from '@stepwise/shared-types';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config/config.ts';
import { ERROR_CODE, FileError } from '../errors.ts';
import { TOKENS } from '../tokens.ts';
import { UUID } from '../util/ids.ts';
import { KeyedQueue } from '../util/keyed-queue.ts';
import { checkImage, type ImageKind, isImageKind, mediaKind } from './media.ts';
import { type PdfPages, readPdfPages } from './pdf-text.ts';
import { checkName, uploadName } from './file-names.ts';
import type { FileListener, SessionFileInfo, TextSlice, WriteOptions } from './file-types.ts';

export type { FileListener, FileSource, SessionFileInfo, TextSlice, WriteOptions } from './file-types.ts';
import { countLines, invalid, isContinuationByte, linesIn, notFound, throwIfAborted } from './file-helpers.ts';

const TEMP_PREFIX = '.partial-';

/** Manifests kept at most (the one listed longest ago is dropped first): a few hundred bytes each. */
const MANIFESTS_KEPT = 1_000;

/** PDFs whose text is kept (the one read longest ago is dropped first). */
const PDF_TEXTS_KEPT = 32;

/** How soon a file put into a session's folder by hand shows in its manifest. */
const MANIFEST_RECHECK_MS = 1_000;

/**
 * The files of each session, in one flat folder per session under `DATA_DIR/files`. Every name
 * is checked before it touches the disk: no separators, no `.`/`..`, no NUL or control characters,
 * at most 255 bytes; symbolic links are never followed, read or replaced.
 */
@injectable()
export class SessionFiles {
  readonly root: string;
  private readonly listeners: FileListener[] = [];
  /** Per session folder: its queue of count checks and places given back. */
  private readonly locks = new KeyedQueue();
  /** Per session folder: names being written, each holding a place under the limit until it is done. */
  private readonly reservations = new Map<string, Map<string, number>>();
  /** Checks of files with rules of their own, by name, run on every write of such a file before it is saved. */
  private readonly validators = new Map<string, (text: string) => void>();
  /** Per session folder (by lower-case id): its manifest, as of the folder's modification time (see manifest()). */
  private readonly manifests = new Map<string, { modified: number; checked: number; max: number; text: string }>();
  /** When each file of a session was last written here (a count of the writes), newest sessions last. */
  private readonly written = new Map<string, Map<string, number>>();
  /** PDFs' text kept, by file path, as of their size and modification time (see readPdf()). */
  private readonly pdfTexts = new Map<string, { size: number; modified: number; pages: PdfPages }>();
  /** Writes and deletes made through this class so far, of any session: a listing made across one is not kept. */
  private changes = 0;

  constructor(@inject(TOKENS.Config) private readonly config: Config) {
    this.root = resolve(config.dataDir, 'files');
  }

  /**
   * Checks every write of a file of this name before it is saved, whoever writes it (an upload, a
   * tool, a strategy): `check` throws an Error whose message says what is wrong (the write is
   * refused with it, an upload with 400, and the old file stays).
   */
  validateWrites(name: string, check: (text: string) => void): void {
    this.validators.set(name, (text) => {
      try {
        check(text);
      } catch (error) {
        throw new FileError(ERROR_CODE.invalidFileContent, error instanceof Error ? error.message : String(error));
      }
    });
  }

  /** The largest file a session may hold, in bytes. */
  get maxBytes(): number {
    return this.config.files.maxBytes;
  }

  onChange(listener: FileListener): void {
    this.listeners.push(listener);
  }

  /** A session file's name checked (see file-names.ts): the name, normalized, or an invalid_file_name error. */
  static checkName = checkName;
  /** The name an uploaded file is stored under (see file-names.ts). */
  static uploadName = uploadName;

  async list(sessionId: string): Promise<SessionFileInfo[]> {
    const dir = this.folder(sessionId);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const files: SessionFileInfo[] = [];
    for (const entry of entries) {
      if (!entry.isFile() || entry.name.startsWith('.')) continue;
      const stats = await lstat(join(dir, entry.name)).catch(() => undefined);
      if (stats?.isFile()) files.push({ name: entry.name, size: stats.size, modified: stats.mtime.toISOString() });
    }
    return files.sort((a, b) => a.name.localeCompare(b.name));
  }

  /**
   * A short list for the prompts, or '' when the session has no files. Strategies ask for it
   * before every model call, on the way to the model request, so it is kept: every write and
   * delete made here (uploads, tools, strategies) drops what was kept, and a change made to the
   * folder by hand is seen within MANIFEST_RECHECK_MS, by one stat of the folder (its modification
   * time moves with every file added, replaced or removed) rather than a listing and a stat per file.
   */
  async manifest(sessionId: string, max = 50): Promise<string> {
    const key = sessionId.toLowerCase();
    const now = performance.now();
    const cached = this.manifests.get(key);
    if (cached?.max === max && now - cached.checked < MANIFEST_RECHECK_MS) return cached.text;
    const folder = statSync(this.folder(sessionId), { throwIfNoEntry: false });
    if (cached?.max === max && (folder?.mtimeMs ?? -1) === cached.modified) {
      cached.checked = now;
      return cached.text;
    }
    const changes = this.changes;
    let text = '';
    if (folder) {
      const files = await this.list(sessionId);
      // "This file" means the newest one: it is marked when there are several.
      // Files written within one tick of the file system's clock share a time: the one written here later is the newer.
      const written = this.written.get(key);
      const later = (file: SessionFileInfo, than: SessionFileInfo) =>
        file.modified > than.modified || (file.modified === than.modified && (written?.get(file.name) ?? 0) >= (written?.get(than.name) ?? 0));
      const newest = files.length > 1 ? files.reduce((latest, file) => (later(file, latest) ? file : latest)) : undefined;
      const lines = files.slice(0, max).map((file) => `- ${file.name} (${formatSize(file.size)}${file === newest ? ', newest' : ''})`);
      if (files.length > max) lines.push(`- … and ${files.length - max} more (list_files shows them all)`);
      text = lines.join('\n');
    }
    // Kept only when nothing was written or deleted here while the folder was listed.
    if (this.changes === changes) {
      this.manifests.delete(key);
      if (this.manifests.size >= MANIFESTS_KEPT) this.manifests.delete(this.manifests.keys().next().value!);
      this.manifests.set(key, { modified: folder?.mtimeMs ?? -1, checked: now, max, text });
    }
    return text;
  }

  /**
   * Writes a whole file (replacing one of that name), through a temporary file and a rename so a
   * reader never sees half of it. `data` may be a stream; it is cut off at the size limit. The
   * name holds its place under the session's file limit from before the first byte until it is
   * done, so parallel writers cannot overshoot the limit. Once `options.signal` aborts, nothing
   * more is done: no temporary file is created, no chunk written, no rename made.
   */
  async write(
    sessionId: string,
    rawName: string,
    data: string | Uint8Array | AsyncIterable<Uint8Array | string>,
    options: WriteOptions,
  ): Promise<SessionFileInfo> {
    const { signal } = options;
    throwIfAborted(signal);
    const name = SessionFiles.checkName(rawName);
    const dir = await this.ensureFolder(sessionId);
    const target = join(dir, name);
    const existing = await lstat(target).catch(() => undefined);
    if (existing && !existing.isFile()) throw invalid(`"${name}" exists and is not a regular file`);
    const release = await this.reserve(dir, name);
    try {
      throwIfAborted(signal);
      const temp = join(dir, `${TEMP_PREFIX}${randomUUID()}`);
      const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      let size = 0;
      try {
        const chunks = typeof data === 'string' || data instanceof Uint8Array ? [data] : data;
        for await (const chunk of chunks) {
          throwIfAborted(signal);
          const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
          size += bytes.byteLength;
          if (size > this.maxBytes) {
            throw new FileError(ERROR_CODE.fileTooLarge, `Files are limited to ${formatSize(this.maxBytes)}`);
          }
          await handle.write(bytes);
        }
        await handle.close();
        throwIfAborted(signal);
        // A file with rules of its own (research's state document) is checked before it replaces the old one.
        const validate = this.validators.get(name);
        if (validate) validate(await readFile(temp, 'utf8'));
        // A PDF or an image is checked whoever writes it: a malformed, encrypted or oversized one is refused here.
        const pages = await this.checkMedia(name, temp);
        await rename(temp, target);
        if (pages) {
          const stats = await lstat(target);
          this.keepPdfText(target, { size: stats.size, modified: stats.mtimeMs, pages });
        }
      } catch (error) {
        await handle.close().catch(() => {});
        await unlink(temp).catch(() => {});
        throw error;
      }
    } finally {
      release();
    }
    const stats = await lstat(target);
    const file = { name, size: stats.size, modified: stats.mtime.toISOString() };
    await this.notify({ sessionId, runId: options.runId, kind: 'saved', file, source: options.source });
    return file;
  }

  /** A whole text file of up to `maxBytes`, or undefined when the session has no file of that name. */
  async readWhole(sessionId: string, rawName: string, maxBytes = 1024 * 1024): Promise<string | undefined> {
    try {
      return (await this.readText(sessionId, rawName, 0, maxBytes)).text;
    } catch (error) {
      if (error instanceof FileError && error.code === ERROR_CODE.fileNotFound) return undefined;
      throw error;
    }
  }

  /** Reads text from byte `offset`, at most `length` bytes, cut at UTF-8 character boundaries. */
  async readText(sessionId: string, rawName: string, offset: number, length: number): Promise<TextSlice> {
    const name = SessionFiles.checkName(rawName);
    const handle = await this.openExisting(sessionId, name);
    try {
      const { size } = await handle.stat();
      if (offset > size) throw invalid(`offset ${offset} is past the end of "${name}" (${size} bytes)`);
      // One extra byte at each end shows where characters begin.
      const buffer = Buffer.alloc(Math.min(length + 4, size - offset));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
      const bytes = buffer.subarray(0, bytesRead);
      let start = 0;
      while (start < bytes.length && isContinuationByte(bytes[start]!)) start++;
      let end = Math.min(length, bytes.length);
      if (end < bytes.length) while (end > start && isContinuationByte(bytes[end]!)) end--;
      const slice = bytes.subarray(start, end);
      if (slice.includes(0)) throw new FileError(ERROR_CODE.notText, `"${name}" is a binary file (${formatSize(size)}); read_file reads text`);
      const lines = bytesRead === size ? linesIn(bytes) : await countLines(handle, size);
      return { text: slice.toString('utf8'), start: offset + start, end: offset + end, size, lines };
    } finally {
      await handle.close();
    }
  }

  /**
   * The text of a session PDF, page by page (checked as at upload: invalid_pdf, encrypted_pdf,
   * too_many_pages). Kept per file while its size and modification time stay the same.
   */
  async readPdf(sessionId: string, rawName: string): Promise<PdfPages> {
    const name = SessionFiles.checkName(rawName);
    const handle = await this.openExisting(sessionId, name);
    try {
      const stats = await handle.stat();
      const path = join(this.folder(sessionId), name);
      const kept = this.pdfTexts.get(path);
      if (kept && kept.size === stats.size && kept.modified === stats.mtimeMs) return kept.pages;
      const pages = await readPdfPages(await handle.readFile(), name, { maxPages: this.config.files.pdfMaxPages });
      this.keepPdfText(path, { size: stats.size, modified: stats.mtimeMs, pages });
      return pages;
    } finally {
      await handle.close();
    }
  }

  /** A session image's bytes and kind (checked as at upload), for a vision model. */
  async readImage(sessionId: string, rawName: string): Promise<{ name: string; kind: ImageKind; bytes: Buffer; width: number; height: number }> {
    const name = SessionFiles.checkName(rawName);
    const kind = mediaKind(name);
    if (!isImageKind(kind)) throw new FileError(ERROR_CODE.invalidImage, `"${name}" is not a PNG, JPEG, WebP or GIF image`);
    const handle = await this.openExisting(sessionId, name);
    try {
      const bytes = await handle.readFile();
      return { name, kind, bytes, ...checkImage(kind, bytes, name, this.config.images.maxPixels) };
    } finally {
      await handle.close();
    }
  }

  /** A stream of the whole file, for download. */
  async openForDownload(sessionId: string, rawName: string): Promise<{ name: string; size: number; stream: ReadStream }> {
    const name = SessionFiles.checkName(rawName);
    const handle = await this.openExisting(sessionId, name);
    const { size } = await handle.stat();
    return { name, size, stream: createReadStream('', { fd: handle, autoClose: true }) };
  }

  /** Deletes a file; nothing is deleted once `options.signal` has aborted. */
  async remove(sessionId: string, rawName: string, options: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    throwIfAborted(options.signal);
    const name = SessionFiles.checkName(rawName);
    const path = join(this.folder(sessionId), name);
    const stats = await lstat(path).catch(() => undefined);
    if (!stats?.isFile()) throw notFound(name);
    throwIfAborted(options.signal);
    await unlink(path);
    await this.notify({ sessionId, kind: 'deleted', file: { name, size: 0, modified: new Date().toISOString() }, source: 'user' });
  }

  /** Removes the session's folder (the session is being deleted). */
  async removeSession(sessionId: string): Promise<void> {
    this.changes++;
    this.manifests.delete(sessionId.toLowerCase());
    this.written.delete(sessionId.toLowerCase());
    await rm(this.folder(sessionId), { recursive: true, force: true });
    this.changes++;
  }

  /**
   * Takes a place for `name` under the session's file limit, or throws too_many_files. The places
   * taken are the names in the folder and the names being written, counted once each (replacing a
   * file takes no new place). Checks run one at a time per session, so two writers never both take
   * the last place. Returns the function that gives the place back (the file, if written, then
   * holds it in the folder). The place goes back through the same queue: a check reads the folder
   * while other writes finish, and a file renamed after that read but given back before the check
   * looks at the names being written would be counted by neither.
   */
  private reserve(dir: string, name: string): Promise<() => void> {
    return this.locks.run(dir, async () => {
      const inFolder = new Set((await readdir(dir)).filter((entry) => !entry.startsWith('.')));
      const writing = this.reservations.get(dir) ?? new Map<string, number>();
      if (!inFolder.has(name) && !writing.has(name)) {
        const taken = inFolder.size + [...writing.keys()].filter((pending) => !inFolder.has(pending)).length;
        if (taken >= this.config.files.maxPerSession) {
          throw new FileError(ERROR_CODE.tooManyFiles, `A session holds at most ${this.config.files.maxPerSession} files`);
        }
      }
      writing.set(name, (writing.get(name) ?? 0) + 1);
      this.reservations.set(dir, writing);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        void this.locks.run(dir, async () => {
          const left = (writing.get(name) ?? 1) - 1;
          if (left > 0) writing.set(name, left);
          else writing.delete(name);
          if (writing.size === 0 && this.reservations.get(dir) === writing) this.reservations.delete(dir);
        });
      };
    });
  }

  /** Checks a PDF or image about to be saved (at `path`); returns a PDF's pages, read on the way. */
  private async checkMedia(name: string, path: string): Promise<PdfPages | undefined> {
    const kind = mediaKind(name);
    if (kind === undefined) return undefined;
    const bytes = await readFile(path);
    if (kind === 'pdf') return readPdfPages(bytes, name, { maxPages: this.config.files.pdfMaxPages });
    checkImage(kind, bytes, name, this.config.images.maxPixels);
    return undefined;
  }

  private keepPdfText(path: string, text: { size: number; modified: number; pages: PdfPages }): void {
    this.pdfTexts.delete(path);
    if (this.pdfTexts.size >= PDF_TEXTS_KEPT) this.pdfTexts.delete(this.pdfTexts.keys().next().value!);
    this.pdfTexts.set(path, text);
  }

  private async openExisting(sessionId: string, name: string) {
    try {
      // O_NOFOLLOW: a symbolic link (whoever put it there) is refused, not followed.
      const handle = await open(join(this.folder(sessionId), name), constants.O_RDONLY | constants.O_NOFOLLOW);
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        throw invalid(`"${name}" is not a regular file`);
      }
      return handle;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw notFound(name);
      if (code === 'ELOOP') throw invalid(`"${name}" is a symbolic link; links are not followed`);
      if (code === 'ENAMETOOLONG') throw invalid('File name too long');
      throw error;
    }
  }

  private folder(sessionId: string): string {
    if (!UUID.test(sessionId)) throw invalid('Not a session id');
    return join(this.root, sessionId.toLowerCase());
  }

  private async ensureFolder(sessionId: string): Promise<string> {
    const dir = this.folder(sessionId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const stats = await lstat(dir);
    if (!stats.isDirectory()) throw invalid('The session folder is not a directory');
    return dir;
  }

  private async notify(change: Parameters<FileListener>[0]): Promise<void> {
    this.changes++;
    const key = change.sessionId.toLowerCase();
    this.manifests.delete(key);
    // The order files were written in here, kept for the sessions whose manifests are kept.
    const written = this.written.get(key) ?? new Map<string, number>();
    written.set(change.file.name, this.changes);
    this.written.delete(key);
    if (this.written.size >= MANIFESTS_KEPT) this.written.delete(this.written.keys().next().value!);
    this.written.set(key, written);
    for (const listener of this.listeners) await listener(change);
  }
}
