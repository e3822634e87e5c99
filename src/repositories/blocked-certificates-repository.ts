import type { Db } from '../db/create-database.js';
import { mapPage, runListQuery, type ListPage, type ListQuery } from '../db/list-query.js';

/** A certificate auto CA enrollment refuses: its identity was deleted by an admin. */
export interface BlockedCertificate {
  id: string;
  caId: string;
  tbsSha256: string;
  fingerprint: string;
  subject: string;
  commonName: string | null;
  identityId: string;
  identityName: string;
  createdAt: Date;
}

interface BlockedCertificateRow {
  id: string;
  ca_id: string;
  tbs_sha256: string;
  fingerprint: string;
  subject: string;
  common_name: string | null;
  identity_id: string;
  identity_name: string;
  created_at: Date;
}

const toBlocked = (r: BlockedCertificateRow): BlockedCertificate => ({
  id: r.id,
  caId: r.ca_id,
  tbsSha256: r.tbs_sha256,
  fingerprint: r.fingerprint,
  subject: r.subject,
  commonName: r.common_name,
  identityId: r.identity_id,
  identityName: r.identity_name,
  createdAt: r.created_at,
});

export const blockedCertificatesRepository = {
  /** Blocks the certificate for its CA; blocking it again keeps the first entry. */
  async insert(db: Db, b: Omit<BlockedCertificate, 'createdAt'>): Promise<BlockedCertificate | undefined> {
    const [row] = await db('blocked_certificates')
      .insert({
        id: b.id,
        ca_id: b.caId,
        tbs_sha256: b.tbsSha256,
        fingerprint: b.fingerprint,
        subject: b.subject,
        common_name: b.commonName,
        identity_id: b.identityId,
        identity_name: b.identityName,
      })
      .onConflict(['ca_id', 'tbs_sha256'])
      .ignore()
      .returning('*');
    return row && toBlocked(row);
  },

  /** Whether this CA's block list holds the certificate (each CA's list is its own). */
  async isBlocked(db: Db, caId: string, tbsSha256: string): Promise<boolean> {
    const row = await db('blocked_certificates').where({ ca_id: caId, tbs_sha256: tbsSha256 }).first('id');
    return row !== undefined;
  },

  async list(db: Db, caId: string, q: ListQuery): Promise<ListPage<BlockedCertificate>> {
    const page = await runListQuery<BlockedCertificateRow>(
      db('blocked_certificates').where({ ca_id: caId }).select('*'),
      q,
      'id',
    );
    return mapPage(page, (rows) => rows.map(toBlocked));
  },

  async delete(db: Db, caId: string, id: string): Promise<BlockedCertificate | undefined> {
    const [row] = await db('blocked_certificates').where({ ca_id: caId, id }).delete().returning('*');
    return row && toBlocked(row);
  },
};
