// "A number the user never faxed before" (smtp.senderAuth.confirmNewDestinations): the store
// answers it from the user's own recipients, both dialects side by side. A number counts as faxed
// once the fax service took a fax to it: `processing`, `delivered`, or `failed` with the service's
// message id (it was sent and failed there). Held, queued, cancelled, or failed before the service
// had it: not faxed. Numbers are compared as stored, normalised E.164 (recipients/).

/** The recipient `r` reached the fax service. */
const FAXED = `(r.state IN ('processing', 'delivered') OR (r.state = 'failed' AND r.message_id IS NOT NULL))`;

export const FAXED_NUMBERS_SQL = {
  /** ? user, ? JSON array of numbers */
  sqlite: `SELECT DISTINCT r.number FROM recipients r JOIN jobs j ON j.id = r.job_id
           WHERE j.user = ? AND r.number IN (SELECT value FROM json_each(?)) AND ${FAXED}`,
  /** $1 user, $2 text[] of numbers */
  postgres: `SELECT DISTINCT r.number FROM recipients r JOIN jobs j ON j.id = r.job_id
             WHERE r.number = ANY($2::text[]) AND j."user" = $1 AND ${FAXED}`,
} as const;
