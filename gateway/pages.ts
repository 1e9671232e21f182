import type { FastifyInstance } from 'fastify';
import { PAGE_POLICY } from '../infra/http/security-headers';

/**
 * The pages the links in identity mails open when APP_URL is not set (it defaults to ROOT_URL):
 * {root}/verify-email, /reset-password, /accept-invite and /confirm-email-change, each with the
 * token in its query string. A front end of your own takes over by setting APP_URL; it then calls
 * the same endpoints. Each page is static HTML plus one script that posts the token (and the
 * password or name the flow needs) to the API and shows the answer — no inline script or style,
 * so the pages run under a strict Content-Security-Policy.
 */
interface Flow {
  title: string;
  endpoint: string;
  fields: { name: string; label: string; type: string }[];
  button: string;
}

const FLOWS: Record<string, Flow> = {
  'verify-email': {
    title: 'Verify your email address',
    endpoint: '/v1/auth/verify-email',
    fields: [],
    button: 'Verify',
  },
  'reset-password': {
    title: 'Choose a new password',
    endpoint: '/v1/auth/reset-password',
    button: 'Change the password',
    fields: [{ name: 'password', label: 'New password (at least 12 characters)', type: 'password' }],
  },
  'accept-invite': {
    title: 'Accept the invitation',
    endpoint: '/v1/auth/accept-invite',
    button: 'Join',
    fields: [
      { name: 'name', label: 'Your name', type: 'text' },
      { name: 'password', label: 'Password (your current one if you already have an account)', type: 'password' },
    ],
  },
  'confirm-email-change': {
    title: 'Confirm the change of your address',
    endpoint: '/v1/auth/confirm-email-change',
    fields: [],
    button: 'Confirm',
  },
};

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (flow: Flow) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(flow.title)}</title><link rel="stylesheet" href="/pages/page.css"></head>
<body><main><h1>${escape(flow.title)}</h1>
<form id="flow" data-endpoint="${escape(flow.endpoint)}">
${flow.fields.map((f) => `<label>${escape(f.label)}<input name="${escape(f.name)}" type="${escape(f.type)}" required></label>`).join('\n')}
<button type="submit">${escape(flow.button)}</button></form>
<p id="result" role="status"></p></main>
<script src="/pages/page.js"></script></body></html>`;

const SCRIPT = `'use strict';
const form = document.getElementById('flow');
const result = document.getElementById('result');
const token = new URLSearchParams(location.search).get('token') || '';
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const body = { token, ...Object.fromEntries(new FormData(form)) };
  result.textContent = '…';
  try {
    const res = await fetch(form.dataset.endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = await res.json().catch(() => ({}));
    result.textContent = res.ok ? 'Done. You can close this page.' : (answer.detail || 'That did not work.');
  } catch {
    result.textContent = 'The service could not be reached.';
  }
});
`;

const STYLE = `body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;line-height:1.5}
label{display:block;margin:1rem 0}input{display:block;width:100%;padding:.5rem;margin-top:.25rem}
button{padding:.5rem 1rem}#result{margin-top:1rem}`;

export const registerPages = (app: FastifyInstance): void => {
  for (const [path, flow] of Object.entries(FLOWS)) {
    const html = page(flow);
    app.get(`/${path}`, { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
      reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_POLICY).send(html),
    );
  }
  app.get('/pages/page.js', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').send(SCRIPT),
  );
  app.get('/pages/page.css', { config: { access: 'public' }, schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'public, max-age=3600').send(STYLE),
  );
};
