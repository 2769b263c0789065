// The deliveries table's kinds widened by Microsoft Graph (issue 52 point 3): the step of each
// backend, from the one table text of delivery-tables.ts. SQLite cannot change a CHECK in place,
// so the table is made again under its name and the rows copied; PostgreSQL swaps the constraint.
// Part of a shipped step once merged: never edit it; a change is a new step per backend.
import { deliveryTables } from "./delivery-tables.js";

const BEFORE = "kind IN ('fhir','hl7','webdav','smb')";
export const DELIVERY_KINDS_WITH_GRAPH = "kind IN ('fhir','hl7','webdav','smb','graph')";

export function deliveryKindGraph(dialect: "sqlite" | "postgres"): string {
  if (dialect === "postgres")
    return `
  ALTER TABLE deliveries DROP CONSTRAINT deliveries_kind_check;
  ALTER TABLE deliveries ADD CONSTRAINT deliveries_kind_check CHECK (${DELIVERY_KINDS_WITH_GRAPH});
  `;
  return `
  DROP INDEX deliveries_due;
  ALTER TABLE deliveries RENAME TO deliveries_before_graph;
  ${deliveryTables().replace(BEFORE, DELIVERY_KINDS_WITH_GRAPH)}
  INSERT INTO deliveries SELECT * FROM deliveries_before_graph;
  DROP TABLE deliveries_before_graph;
  `;
}
