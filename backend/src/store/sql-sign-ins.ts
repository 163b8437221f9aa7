import type { Kysely } from 'kysely';
import type { Tables } from './sql-tables.ts';

/** Ends a sign-in before its expiry (sign-out): its cookie is refused from now on, on every instance. */
export async function revokeSignIn(db: Kysely<Tables>, now: string, id: string, expiresAt: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    // The ended sign-ins past their expiry are forgotten as new ones come: their cookies are refused anyway.
    await tx.deleteFrom('revoked_sign_ins').where('expires_at', '<', now).execute();
    await tx
      .insertInto('revoked_sign_ins')
      .values({ id, expires_at: expiresAt })
      .onConflict((conflict) => conflict.column('id').doNothing())
      .execute();
  });
}

export async function isSignInRevoked(db: Kysely<Tables>, id: string): Promise<boolean> {
  const row = await db.selectFrom('revoked_sign_ins').select('id').where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}
