import type { Context } from 'koa';
import { WEBAUTHN_SCRIPT_PRELUDE } from './webauthn-script-prelude.js';

/**
 * The login pages' one script (served at LOGIN_PATHS.passkeyScript, from this file, never from
 * elsewhere): it runs the browser's passkey ceremony for a form marked `data-passkey`. The form
 * posts like any other, with the authenticator's answer as JSON in its hidden `passkey` field, so
 * the server answers it as it answers a password form (the next page, or the 303 to the client).
 * Without it the forms stay hidden and the page works for passwords alone.
 *
 *   data-passkey="get"      navigator.credentials.get    (sign in, or the second factor)
 *   data-passkey="create"   navigator.credentials.create (a passkey registered mid-flow)
 *   data-options            where to GET the options (JSON) for this ceremony
 */
const LOGIN_PASSKEY_SCRIPT = `'use strict';
(function () {
${WEBAUTHN_SCRIPT_PRELUDE}  function start(form) {
    var kind = form.getAttribute('data-passkey');
    var status = form.querySelector('[data-passkey-status]');
    function fail(message) {
      if (status) { status.textContent = message; status.hidden = false; }
    }
    form.addEventListener('submit', function (event) {
      if (form.elements.passkey.value) return;
      event.preventDefault();
      fetch(form.getAttribute('data-options'), { headers: { accept: 'application/json' }, credentials: 'same-origin' })
        .then(function (res) {
          return res.json().then(function (body) {
            if (!res.ok) throw new Error((body.error && body.error.message) || 'the passkey options were refused');
            return body;
          });
        })
        .then(function (options) {
          var publicKey = webauthnJson.publicKeyOf(kind, options);
          return kind === 'get' ? navigator.credentials.get({ publicKey: publicKey }) : navigator.credentials.create({ publicKey: publicKey });
        })
        .then(function (cred) {
          if (!cred) throw new Error('no passkey was chosen');
          form.elements.passkey.value = JSON.stringify(webauthnJson.jsonOf(cred));
          form.submit();
        })
        .catch(function (err) {
          fail('The passkey could not be used: ' + (err && err.message ? err.message : 'cancelled') + '.');
        });
    });
    form.hidden = false;
  }
  if (!window.PublicKeyCredential || !window.fetch) return;
  var forms = document.querySelectorAll('form[data-passkey]');
  for (var i = 0; i < forms.length; i++) start(forms[i]);
})();
`;

/** `GET /oidc/login/passkey.js`: the script, cacheable for a while (it changes only with a release). */
export function servePasskeyScript(ctx: Context): void {
  ctx.type = 'text/javascript; charset=utf-8';
  ctx.set('cache-control', 'public, max-age=3600');
  ctx.set('x-content-type-options', 'nosniff');
  ctx.body = LOGIN_PASSKEY_SCRIPT;
}
