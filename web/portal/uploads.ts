import { Upload, defaultOptions, type DetailedError, type PreviousUpload } from 'tus-js-client';
import { refreshCard } from './cards.js';
import { data, formatBytes, t } from './messages.js';

/**
 * File items: drag and drop, the phone's camera and photo picker, checks the browser can make
 * before sending (type, size, image size, transparency), previews, a progress bar per file, and
 * resumable uploads over tus: an interrupted upload continues from its offset, after a reload too
 * (choose the same file again). The server checks every file again when it has arrived.
 */
interface Rules {
  formats: string[] | null;
  extensions: string[] | null;
  mimes: string[] | null;
  max_bytes: number | null;
  min_width: number | null;
  min_height: number | null;
  transparent: boolean;
  max_count: number | null;
  replaces: boolean;
}

/** 8 MiB per PATCH: a dropped connection costs at most one chunk, and proxies' body limits are respected. */
const CHUNK_BYTES = 8 * 1024 * 1024;
const RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000];
const RASTER = /^image\/(png|jpeg|webp|gif)$/;

const active = new Map<string, Set<Upload>>();
const waitingForNetwork = new Set<Upload>();
window.addEventListener('online', () => {
  for (const upload of waitingForNetwork) upload.start();
  waitingForNetwork.clear();
});

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string,
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function imageProblem(file: File, rules: Rules): Promise<string | null> {
  if (!RASTER.test(file.type) || (!rules.min_width && !rules.min_height && !rules.transparent)) return null;
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    return null; // The browser cannot decode it; the server will judge.
  }
  const { width, height } = bitmap;
  bitmap.close();
  if (rules.min_width && width < rules.min_width)
    return t('js.too_narrow', { name: file.name, width, min: rules.min_width });
  if (rules.min_height && height < rules.min_height)
    return t('js.too_short', { name: file.name, height, min: rules.min_height });
  if (rules.transparent) {
    if (file.type === 'image/jpeg') return t('js.not_transparent', { name: file.name });
    const scale = Math.min(1, 512 / Math.max(width, height));
    const w = Math.max(1, Math.round(width * scale));
    const h = Math.max(1, Math.round(height * scale));
    try {
      const small = await createImageBitmap(file, { resizeWidth: w, resizeHeight: h });
      const canvas = new OffscreenCanvas(w, h);
      const context = canvas.getContext('2d');
      if (!context) return null;
      context.drawImage(small, 0, 0);
      small.close();
      const pixels = context.getImageData(0, 0, w, h).data;
      for (let i = 3; i < pixels.length; i += 4) if ((pixels[i] ?? 255) < 255) return null;
      return t('js.not_transparent', { name: file.name });
    } catch {
      return null;
    }
  }
  return null;
}

async function problemWith(file: File, rules: Rules): Promise<string | null> {
  const name = file.name.toLowerCase();
  const dot = name.lastIndexOf('.');
  const extension = dot >= 0 ? name.slice(dot) : '';
  if (
    rules.extensions &&
    rules.mimes &&
    !rules.extensions.includes(extension) &&
    !rules.mimes.includes(file.type)
  ) {
    const formats = new Intl.ListFormat(data.language, { type: 'disjunction' }).format(
      (rules.formats ?? []).map((f) => f.toUpperCase()),
    );
    return t('js.wrong_type', { name: file.name, formats });
  }
  if (rules.max_bytes !== null && file.size > rules.max_bytes) {
    return t('js.too_large', { name: file.name, size: formatBytes(rules.max_bytes) });
  }
  return imageProblem(file, rules);
}

function reasonOf(error: Error | DetailedError): string {
  const response = 'originalResponse' in error ? error.originalResponse : null;
  if (!response) return t('js.network');
  if (response.getStatus() === 429) return t('js.rate_limited');
  try {
    const body = JSON.parse(response.getBody()) as { client_message?: string; message?: string };
    return body.client_message ?? body.message ?? t('js.invalid');
  } catch {
    return t('js.invalid');
  }
}

function isNetworkError(error: Error | DetailedError): boolean {
  const status = 'originalResponse' in error ? (error.originalResponse?.getStatus() ?? 0) : 0;
  return status === 0 || status >= 500;
}

export function enhanceUploadForm(form: HTMLFormElement): void {
  const card = form.closest<HTMLElement>('.card');
  const key = card?.dataset.key ?? '';
  const endpoint = form.dataset.tus ?? '';
  const rules = JSON.parse(form.dataset.rules ?? '{}') as Rules;
  const list = form.querySelector<HTMLUListElement>('.uploads');
  const drop = form.querySelector<HTMLElement>('[data-drop]');
  if (!card || !list) return;
  const jobs = active.get(key) ?? new Set<Upload>();
  active.set(key, jobs);

  const fileCount = () => (card.querySelectorAll('.files .file').length ?? 0) + jobs.size;

  const failure = (name: string, message: string) => {
    const li = element('li', 'upload failed');
    li.append(element('span', 'thumb'), element('span', 'file-text'));
    const text = li.lastElementChild as HTMLElement;
    text.append(element('span', 'file-name', name), element('span', 'upload-status', message));
    const dismiss = element('button', 'link', t('js.discard'));
    dismiss.type = 'button';
    dismiss.addEventListener('click', () => li.remove());
    li.append(dismiss);
    list.append(li);
  };

  const finishedOne = async () => {
    if (jobs.size > 0) return;
    const failed = Array.from(list.querySelectorAll('.upload.failed'));
    await refreshCard(key);
    const fresh = document.querySelector<HTMLUListElement>(`#item-${CSS.escape(key)} .uploads`);
    fresh?.append(...failed);
  };

  const start = async (file: File) => {
    const li = element('li', 'upload');
    const preview = RASTER.test(file.type) ? element('img', 'thumb') : element('span', 'thumb');
    if (preview instanceof HTMLImageElement) {
      preview.alt = '';
      preview.src = URL.createObjectURL(file);
      // Not decodable here (a HEIC, a mislabelled file): a plain tile instead of a broken image.
      preview.addEventListener('error', () => preview.replaceWith(element('span', 'thumb')), { once: true });
    }
    const text = element('span', 'file-text');
    const bar = element('progress', '');
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute('aria-label', file.name);
    const status = element('span', 'upload-status', t('js.uploading', { percent: 0 }));
    text.append(element('span', 'file-name', file.name), bar, status);
    const actions = element('span', 'upload-actions');
    const cancel = element('button', 'link', t('js.cancel'));
    cancel.type = 'button';
    actions.append(cancel);
    li.append(preview, text, actions);
    list.append(li);

    const upload: Upload = new Upload(file, {
      endpoint,
      chunkSize: CHUNK_BYTES,
      retryDelays: RETRY_DELAYS,
      metadata: { filename: file.name, filetype: file.type || 'application/octet-stream' },
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: true,
      onShouldRetry: (error) => {
        const code = error.originalResponse?.getStatus() ?? 0;
        return code === 0 || code === 409 || code === 423 || code === 429 || code >= 500;
      },
      onProgress: (sent, total) => {
        const percent = total > 0 ? Math.floor((sent / total) * 100) : 0;
        bar.value = percent;
        status.textContent = t('js.uploading', { percent });
      },
      onSuccess: () => {
        jobs.delete(upload);
        // Earlier refusals are settled by a file that went through: their messages go.
        for (const old of Array.from(list.querySelectorAll('.upload.failed'))) old.remove();
        li.classList.add('done');
        bar.value = 100;
        status.textContent = t('js.uploaded');
        cancel.remove();
        void finishedOne();
      },
      onError: (error) => {
        if (isNetworkError(error)) {
          status.textContent = t('js.paused');
          waitingForNetwork.add(upload);
          const retry = element('button', 'link', t('js.retry'));
          retry.type = 'button';
          retry.addEventListener('click', () => {
            waitingForNetwork.delete(upload);
            retry.remove();
            status.textContent = t('js.uploading', { percent: bar.value });
            upload.start();
          });
          actions.prepend(retry);
          return;
        }
        jobs.delete(upload);
        li.classList.add('failed');
        status.textContent = t('js.upload_failed', { reason: reasonOf(error) });
        cancel.textContent = t('js.discard');
        void finishedOne();
      },
    });
    jobs.add(upload);
    cancel.addEventListener('click', () => {
      jobs.delete(upload);
      waitingForNetwork.delete(upload);
      li.remove();
      void upload.abort(true).catch(() => undefined);
    });
    const previous = await upload.findPreviousUploads();
    const resumable = previous.find((p) => p.uploadUrl);
    if (resumable) {
      upload.resumeFromPreviousUpload(resumable);
      card.querySelector(`.resume-note[data-url="${CSS.escape(resumable.uploadUrl ?? '')}"]`)?.remove();
    }
    upload.start();
  };

  const accept = async (picked: File[]) => {
    // A one-file item takes the first file chosen, and it replaces the one the item holds.
    const files = rules.replaces ? picked.slice(0, 1) : picked;
    for (const file of files) {
      if (rules.replaces && jobs.size > 0) {
        failure(file.name, t('js.one_at_a_time'));
        continue;
      }
      if (!rules.replaces && rules.max_count !== null && fileCount() >= rules.max_count) {
        failure(file.name, t('js.too_many', { n: rules.max_count }));
        continue;
      }
      const problem = await problemWith(file, rules);
      if (problem) failure(file.name, problem);
      else await start(file);
    }
  };

  for (const input of Array.from(form.querySelectorAll<HTMLInputElement>('input[type="file"]'))) {
    input.addEventListener('change', () => {
      const files = Array.from(input.files ?? []);
      input.value = '';
      void accept(files);
    });
  }
  form.addEventListener('submit', (event) => event.preventDefault());
  if (drop) {
    const on = (event: DragEvent) => {
      event.preventDefault();
      drop.classList.add('dragover');
    };
    drop.addEventListener('dragenter', on);
    drop.addEventListener('dragover', on);
    drop.addEventListener('dragleave', () => drop.classList.remove('dragover'));
    drop.addEventListener('drop', (event) => {
      event.preventDefault();
      drop.classList.remove('dragover');
      void accept(Array.from(event.dataTransfer?.files ?? []));
    });
  }
  void showInterrupted(card, key, list);
}

/** Uploads of this item that stopped before the end (another visit, a reload): offer to continue. */
async function showInterrupted(card: HTMLElement, key: string, list: HTMLUListElement): Promise<void> {
  let stored: PreviousUpload[];
  try {
    stored = await defaultOptions.urlStorage.findAllUploads();
  } catch {
    return;
  }
  const marker = `/portal/api/${data.intake_id}/items/${key}/tus/`;
  for (const previous of stored) {
    const url = previous.uploadUrl;
    if (!url?.includes(marker) || card.querySelector(`.resume-note[data-url="${CSS.escape(url)}"]`)) continue;
    const head = await fetch(url, { method: 'HEAD', headers: { 'Tus-Resumable': '1.0.0' } }).catch(
      () => null,
    );
    if (!head?.ok) {
      if (head && head.status < 500) await defaultOptions.urlStorage.removeUpload(previous.urlStorageKey);
      continue;
    }
    const offset = Number(head.headers.get('Upload-Offset') ?? 0);
    const length = Number(head.headers.get('Upload-Length') ?? previous.size ?? 0);
    const percent = length > 0 ? Math.floor((offset / length) * 100) : 0;
    const note = element(
      'p',
      'resume-note',
      t('js.resume_hint', { name: previous.metadata.filename ?? '', percent }),
    );
    note.dataset.url = url;
    const forget = element('button', 'link', t('js.discard'));
    forget.type = 'button';
    forget.addEventListener('click', () => {
      note.remove();
      void Upload.terminate(url).catch(() => undefined);
      void defaultOptions.urlStorage.removeUpload(previous.urlStorageKey);
    });
    note.append(' ', forget);
    list.before(note);
  }
}
