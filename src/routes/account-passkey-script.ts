import { WEBAUTHN_SCRIPT_PRELUDE } from './webauthn-script-prelude.js';

/**
 * The account page's one script (`/account/passkeys.js`), served by the controller itself: it
 * adds a passkey. It asks this origin for creation options, lets the browser create the credential
 * (`navigator.credentials.create`), and posts the result back; both requests carry the page's CSRF
 * token in a header. Everything else on the page works without it. Plain ES2020, no library, so
 * that the page's CSP can allow this one file and nothing else.
 */
export const ACCOUNT_PASSKEY_SCRIPT = `'use strict';
(function () {
  var form = document.getElementById('add-passkey');
  if (!form || !window.PublicKeyCredential || !navigator.credentials) return;
  var status = document.getElementById('add-passkey-status');
  var nameInput = document.getElementById('passkey-name');
  var csrf = form.querySelector('input[name=csrf]').value;
${WEBAUTHN_SCRIPT_PRELUDE}
  function show(message, isError) {
    status.textContent = message;
    status.className = isError ? 'error' : 'notice';
    if (isError) {
      nameInput.setAttribute('aria-invalid', 'true');
      nameInput.setAttribute('aria-describedby', 'add-passkey-status');
    } else {
      nameInput.removeAttribute('aria-invalid');
      nameInput.removeAttribute('aria-describedby');
    }
  }
  async function post(path, body) {
    var res = await fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: JSON.stringify(body),
    });
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) throw new Error((data.error && data.error.message) || 'the request failed (' + res.status + ')');
    return data.data;
  }
  form.addEventListener('submit', async function (event) {
    event.preventDefault();
    var name = nameInput.value.trim();
    if (!name) return show('Enter a name for the passkey.', true);
    show('Follow your browser’s prompt to create the passkey…', false);
    try {
      var started = await post('/account/passkeys/options', {});
      var credential = await navigator.credentials.create({
        publicKey: webauthnJson.publicKeyOf('create', started.options),
      });
      if (!credential) throw new Error('no passkey was created');
      await post('/account/passkeys/register', { name: name, response: webauthnJson.jsonOf(credential) });
      window.location.assign('/account/passkeys?done=passkey-added');
    } catch (err) {
      var message = err && err.name === 'NotAllowedError'
        ? 'The passkey was not created (cancelled or timed out).'
        : err && err.name === 'InvalidStateError'
          ? 'This authenticator already holds a passkey for your identity.'
          : 'The passkey could not be added: ' + (err && err.message ? err.message : err);
      show(message, true);
    }
  });
})();
`;
