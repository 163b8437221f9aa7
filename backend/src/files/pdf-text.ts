import { ERROR_CODE, FileError } from '../errors.ts';

/** The text of a PDF, one string a page (page 1 first). */
export type PdfPages = string[];

/**
 * The text of every page of a PDF, read with PDF.js (through unpdf's server build, loaded on first
 * use). Nothing in the file runs: its scripts and actions are never asked for, XFA forms are off,
 * and only the text content of each page is read (no page is rendered). A file that is not a PDF, or a broken one, is refused
 * with invalid_pdf, a password-protected one with encrypted_pdf, one of more than `maxPages` pages
 * with too_many_pages (before any page is read).
 */
export async function readPdfPages(bytes: Uint8Array, name: string, options: { maxPages: number }): Promise<PdfPages> {
  if (!startsLikePdf(bytes)) throw new FileError(ERROR_CODE.invalidPdf, `"${name}" is not a PDF (it does not start with %PDF-)`);
  const { getDocumentProxy } = await import('unpdf');
  // PDF.js may take over the buffer it is given: it gets a copy.
  const data = new Uint8Array(bytes);
  let document: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    document = await getDocumentProxy(data, {
      enableXfa: false,
      stopAtErrors: true,
      verbosity: 0,
    });
  } catch (error) {
    throw refusal(error, name);
  }
  try {
    if (document.numPages > options.maxPages) {
      throw new FileError(ERROR_CODE.tooManyPages, `"${name}" has ${document.numPages} pages; PDFs are limited to ${options.maxPages} (PDF_MAX_PAGES)`);
    }
    const pages: PdfPages = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      let text = '';
      for (const item of content.items) {
        if (!('str' in item)) continue;
        text += item.str;
        if (item.hasEOL) text += '\n';
      }
      pages.push(text.replace(/[ \t]+\n/g, '\n').trim());
      page.cleanup();
    }
    return pages;
  } catch (error) {
    throw error instanceof FileError ? error : refusal(error, name);
  } finally {
    await document.loadingTask.destroy();
  }
}

/** True when the first kilobyte holds the PDF header (readers accept it a little way in). */
function startsLikePdf(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, 1024)).includes('%PDF-');
}

function refusal(error: unknown, name: string): FileError {
  const kind = error instanceof Error ? error.name : '';
  if (kind === 'PasswordException') {
    return new FileError(ERROR_CODE.encryptedPdf, `"${name}" is password-protected; save it without a password and attach it again`);
  }
  // PDF.js's own words name the fault ("Invalid PDF structure"); nothing else of the error is shown.
  const reason = error instanceof Error && /^[\w .,'()-]{1,120}$/.test(error.message) ? `: ${error.message}` : '';
  return new FileError(ERROR_CODE.invalidPdf, `"${name}" could not be read as a PDF${reason}`);
}

/** Parses a page range as read_file takes it: "3", "3-5", "7-" (to the end); pages count from 1. */
export function parsePageRange(range: string, pageCount: number): { first: number; last: number } {
  const match = /^\s*(\d+)\s*(?:(-)\s*(\d+)?)?\s*$/.exec(range);
  if (!match) throw new FileError(ERROR_CODE.invalidFileContent, `pages "${range}" is not a page range (e.g. "3", "3-5", "7-")`);
  const first = Number(match[1]);
  const last = match[2] ? (match[3] ? Number(match[3]) : pageCount) : first;
  if (first < 1 || last < first) throw new FileError(ERROR_CODE.invalidFileContent, `pages "${range}": the range must run forward from page 1 or later`);
  if (first > pageCount) throw new FileError(ERROR_CODE.invalidFileContent, `pages "${range}": the PDF has ${pageCount} page${pageCount === 1 ? '' : 's'}`);
  return { first, last: Math.min(last, pageCount) };
}
