/**
 * The part both page scripts share (the login pages' and the account page's): the conversion of
 * the server's JSON options to what `navigator.credentials` takes, and of the credential back to
 * JSON. Browsers with `parse…OptionsFromJSON` and `toJSON` use those; older ones get the same by
 * hand (base64url ⇄ ArrayBuffer). It defines one variable, `webauthnJson`, inside each script's
 * own function scope; each script is still served as one file, the only one its page's CSP allows.
 *
 *   webauthnJson.publicKeyOf('get' | 'create', options)  the `publicKey` of the ceremony
 *   webauthnJson.jsonOf(credential)                        the credential as the server reads it
 */
export const WEBAUTHN_SCRIPT_PRELUDE = `  var webauthnJson = (function () {
    function toBuffer(s) {
      var t = s.replace(/-/g, '+').replace(/_/g, '/');
      var bin = atob(t + '==='.slice((t.length + 3) % 4));
      var out = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
      return out.buffer;
    }
    function fromBuffer(buf) {
      var bytes = new Uint8Array(buf), bin = '';
      for (var i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
      return btoa(bin).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
    }
    function descriptors(list) {
      return (list || []).map(function (c) {
        return { id: toBuffer(c.id), type: c.type, transports: c.transports };
      });
    }
    function publicKeyOf(kind, o) {
      var P = window.PublicKeyCredential;
      if (kind === 'get' && P.parseRequestOptionsFromJSON) return P.parseRequestOptionsFromJSON(o);
      if (kind === 'create' && P.parseCreationOptionsFromJSON) return P.parseCreationOptionsFromJSON(o);
      var k = Object.assign({}, o, { challenge: toBuffer(o.challenge) });
      if (kind === 'get') k.allowCredentials = descriptors(o.allowCredentials);
      else {
        k.user = Object.assign({}, o.user, { id: toBuffer(o.user.id) });
        k.excludeCredentials = descriptors(o.excludeCredentials);
      }
      return k;
    }
    function jsonOf(cred) {
      if (typeof cred.toJSON === 'function') return cred.toJSON();
      var r = cred.response, response = { clientDataJSON: fromBuffer(r.clientDataJSON) };
      if (r.attestationObject) {
        response.attestationObject = fromBuffer(r.attestationObject);
        response.transports = r.getTransports ? r.getTransports() : [];
      } else {
        response.authenticatorData = fromBuffer(r.authenticatorData);
        response.signature = fromBuffer(r.signature);
        if (r.userHandle) response.userHandle = fromBuffer(r.userHandle);
      }
      return {
        id: cred.id, rawId: fromBuffer(cred.rawId), type: cred.type, response: response,
        authenticatorAttachment: cred.authenticatorAttachment || undefined,
        clientExtensionResults: cred.getClientExtensionResults()
      };
    }
    return { publicKeyOf: publicKeyOf, jsonOf: jsonOf };
  })();
`;
