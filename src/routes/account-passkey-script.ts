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

  function b64urlToBytes(s) {
    var b64 = s.replace(/-/g, '+').replace(/_/g, '/');
    while (b64.length % 4) b64 += '=';
    var bin = atob(b64);
    var out = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  function bytesToB64url(buf) {
    var bytes = new Uint8Array(buf);
    var bin = '';
    for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
  }
  function creationOptions(json) {
    if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(json);
    var o = Object.assign({}, json);
    o.challenge = b64urlToBytes(json.challenge);
    o.user = Object.assign({}, json.user, { id: b64urlToBytes(json.user.id) });
    o.excludeCredentials = (json.excludeCredentials || []).map(function (c) {
      return Object.assign({}, c, { id: b64urlToBytes(c.id) });
    });
    return o;
  }
  function responseJSON(cred) {
    if (typeof cred.toJSON === 'function') return cred.toJSON();
    var r = cred.response;
    return {
      id: cred.id,
      rawId: bytesToB64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults(),
      response: {
        clientDataJSON: bytesToB64url(r.clientDataJSON),
        attestationObject: bytesToB64url(r.attestationObject),
        transports: r.getTransports ? r.getTransports() : [],
      },
    };
  }
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
      var credential = await navigator.credentials.create({ publicKey: creationOptions(started.options) });
      if (!credential) throw new Error('no passkey was created');
      await post('/account/passkeys/register', { name: name, response: responseJSON(credential) });
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
