/**
 * Copies text to the clipboard. Where the clipboard is out of reach (a page served over plain
 * http from another machine), it resolves false and the caller offers the text to select instead.
 */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (!navigator.clipboard) return false;
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
