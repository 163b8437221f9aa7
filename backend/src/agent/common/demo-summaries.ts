/** The demo model's summaries of what read_file returned: a text file's lines and sections, a PDF's pages. */

/**
 * read_file's result of a text file: its header line ("notes.txt: bytes 0-120 of 120, 3 lines in
 * all") read for the file's line count, and a note on what is left ("[N more bytes: …]") for
 * whether the text is the whole file.
 */
function readResult(result: string): { total: number | undefined; partial: boolean; text: string } {
  const header = /^[^\n]*: bytes \d+-\d+ of (\d+)(?:, (\d+) lines? in all)?\n/.exec(result);
  const rest = /\n\[\d+ more bytes: read_file with offset \d+\]$/;
  const body = result.slice(header?.[0].length ?? 0);
  return { total: header?.[2] === undefined ? undefined : Number(header[2]), partial: rest.test(body), text: body.replace(rest, '') };
}

/** A file's size as one phrase, from read_file's result: "3000 lines in all, 2100 words read" or "3 lines, 12 words". */
export function sizeOf(result: string): string {
  const { total, partial, text } = readResult(result);
  const words = text.split(/\s+/).filter(Boolean).length;
  const lines = total ?? text.split('\n').filter((line) => line.trim()).length;
  return partial ? `${lines} lines in all, of which I read ${words} words` : `${lines} line${lines === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}`;
}

/** A real summary of a PDF's pages as read_file gave them: its pages and words, the pages read, their first lines. */
function summarizePdf(name: string, header: RegExpExecArray, result: string): string {
  const [first, last, total, words] = header.slice(1, 5).map(Number) as [number, number, number, number];
  const body = result.slice(header[0].length).replace(/(\n\[[^\n]*\])+$/, '');
  const text = body.replace(/^--- page \d+ ---$/gm, '');
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && line !== '(no text on this page)');
  const readWords = text.split(/\s+/).filter(Boolean).length;
  const whole = first === 1 && last === total;
  const pages = (count: number) => `${count} page${count === 1 ? '' : 's'}`;
  const parts = [
    whole
      ? `**${name}**: a PDF of ${pages(total)}, ${words} word${words === 1 ? '' : 's'}.`
      : `**${name}**: a PDF of ${pages(total)} (${words} words in all); I read ${first === last ? `page ${first}` : `pages ${first}-${last}`} (${readWords} words), and summarize those.`,
  ];
  if (lines.length)
    parts.push(
      `${first === 1 ? 'It begins' : `Page ${first} begins`}:\n\n${lines
        .slice(0, 3)
        .map((line) => `> ${line}`)
        .join('\n')}`,
    );
  else parts.push('Those pages hold no text (a scanned PDF holds pictures of pages, which I cannot read).');
  return parts.join('\n\n');
}

/** A real summary of a text file: its size in lines and words, its headings, its first sentences. */
export function summarize(name: string, result: string): string {
  const pdf = /^[^\n]*: pages (\d+)-(\d+) of (\d+), (\d+) words in all\n/.exec(result);
  if (pdf) return summarizePdf(name, pdf, result);
  const { total, partial, text } = readResult(result);
  const lines = text.split('\n').filter((line) => line.trim());
  const words = text.split(/\s+/).filter(Boolean).length;
  const headings = lines.filter((line) => /^#{1,6}\s/.test(line)).map((line) => line.replace(/^#+\s*/, ''));
  const prose = lines.filter((line) => !/^#{1,6}\s/.test(line)).join(' ');
  const sentences = (prose.match(/[^.!?]+[.!?]+/g) ?? [prose])
    .map((sentence) => sentence.trim())
    .filter(Boolean)
    .slice(0, 2);
  const count = total ?? lines.length;
  const parts = [
    partial
      ? `**${name}**: ${count} line${count === 1 ? '' : 's'} in all; I read the first ${text.split('\n').length - 1} of them (${words} words), and summarize those.`
      : `**${name}**: ${count} line${count === 1 ? '' : 's'}, ${words} word${words === 1 ? '' : 's'}.`,
  ];
  if (headings.length) parts.push(`Sections: ${headings.slice(0, 8).join('; ')}.`);
  if (sentences.length) parts.push(`It begins: ${sentences.join(' ')}`);
  return parts.join('\n\n');
}
