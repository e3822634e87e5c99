import type { Db } from '../db/create-database.js';

/** The random WebAuthn user handle (`user.id`) of each identity that registered a passkey. */
export const webauthnUserHandlesRepository = {
  /**
   * The identity's handle: the stored one, or `fresh`, stored now. One statement either way (an
   * insert that keeps an existing row), so two first registrations agree on one handle.
   */
  async findOrCreate(db: Db, identityId: string, fresh: string): Promise<string> {
    // The no-op update makes the existing row come back from RETURNING, where `ignore` would not.
    const [row] = (await db('webauthn_user_handles')
      .insert({ identity_id: identityId, user_handle: fresh })
      .onConflict('identity_id')
      .merge({ user_handle: db.raw('webauthn_user_handles.user_handle') })
      .returning('user_handle')) as { user_handle: string }[];
    return row!.user_handle;
  },

  async find(db: Db, identityId: string): Promise<string | undefined> {
    const row = await db('webauthn_user_handles').where({ identity_id: identityId }).first('user_handle');
    return (row as { user_handle: string } | undefined)?.user_handle;
  },
};
