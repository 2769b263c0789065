// The readable text of a mail's body: its text part, or its HTML part turned into text.
import { convert } from 'html-to-text';

export function bodyText(mail: { text: string; html: string }): string {
  if (mail.text.trim()) return mail.text.trim();
  if (mail.html.trim()) {
    try {
      return convert(mail.html, { wordwrap: false, selectors: [{ selector: 'img', format: 'skip' }, { selector: 'a', options: { ignoreHref: true } }] }).trim();
    } catch {
      return '';
    }
  }
  return '';
}
