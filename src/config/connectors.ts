// The connector deliveries of inbound.routes[].deliver (issue 52, docs/connectors.md): a received
// fax handed to a system of record (a FHIR server, an HL7 v2 interface engine, a WebDAV or SMB
// document folder) as a queued delivery. Credentials are never written here: each key ending in
// `Secret` names a line of the secrets file, read when the connector is used.
import { z } from "zod";
import { duration } from "./duration.js";
import { isUrlWithScheme } from "../url-check.js";

/** The name of a NAME=VALUE line in the secrets file. */
const secretName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "expected the name of a line in the secrets file, e.g. FHIR_TOKEN");
const caFile = z.string().regex(/^\//, "expected the absolute path of a PEM file of CA certificates");
const httpsUrl = z
  .string()
  .refine((u) => isUrlWithScheme(u, ["https:"]), "expected an https:// URL")
  .refine((u) => !/^[^/]*\/\/[^/]*@/.test(u), "must not carry credentials: name them with a *Secret key");
const coding = z
  .object({ system: z.string().min(1), code: z.string().min(1), display: z.string().min(1).optional() })
  .strict();
/** A file's path under the folder: the name pattern's fields, "/" between folders. */
const pathPattern = z
  .string()
  .min(1)
  .max(300)
  .refine((p) => !p.split("/").some((s) => s === ".." || s === "."), "must not contain . or .. segments");
/** `{matter}`: a fixed matter of the rule, or the one match of a pattern in the fax's text (OCR). */
const matter = z.union([
  z.string().min(1).max(80),
  z
    .object({
      /** a regular expression whose first group is the matter number, e.g. "Matter No\\.?\\s*(\\d{4}-\\d+)" */
      pattern: z
        .string()
        .min(1)
        .max(200)
        .refine((p) => {
          try {
            new RegExp(p);
            return true;
          } catch {
            return false;
          }
        }, "expected a regular expression"),
    })
    .strict(),
]);

const folderNaming = {
  /** where the PDF goes under the folder; a sidecar JSON of the fax's record beside it (.json) */
  path: pathPattern.default("{date}_{time}_{sender}.pdf"),
  /** where a fax goes when `path` names {matter} and there is none, or more than one */
  unsorted: pathPattern.default("Unsorted/{date}_{time}_{sender}.pdf"),
  matter: matter.optional(),
};

export const fhirDelivery = z
  .object({
    fhir: z
      .object({
        /** the FHIR R4 base URL, e.g. https://ehr.example/apis/default/fhir */
        base: httpsUrl,
        auth: z.union([
          z.object({ bearer: z.object({ tokenSecret: secretName }).strict() }).strict(),
          z
            .object({
              /** SMART backend services: client credentials with a JWT signed by our key */
              smart: z
                .object({
                  tokenUrl: httpsUrl,
                  clientId: z.string().min(1),
                  /** a PEM private key (PKCS#8) in the secrets file */
                  keySecret: secretName,
                  keyId: z.string().min(1).optional(),
                  alg: z.enum(["RS384", "ES384"]).default("RS384"),
                  scope: z.string().min(1).default("system/DocumentReference.write system/Binary.write"),
                })
                .strict(),
            })
            .strict(),
        ]),
        type: coding.default({ system: "http://loinc.org", code: "34109-9", display: "Note" }),
        category: coding.default({
          system: "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category",
          code: "clinical-note",
          display: "Clinical Note",
        }),
        /** the identifier system of the fax's message id (the conditional create is keyed on it) */
        identifierSystem: z.string().min(1).default("urn:faxgate:fax:message-id"),
        /** PDFs larger than this go as a Binary the DocumentReference points to */
        inlineMaxBytes: z.number().int().min(0).default(1_048_576),
        caFile: caFile.optional(),
        timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
      })
      .strict(),
  })
  .strict();

export const hl7Delivery = z
  .object({
    hl7: z
      .object({
        host: z.string().min(1),
        port: z.number().int().min(1).max(65535),
        /** MLLP over TLS (verified against caFile, or the system's CAs) */
        tls: z.boolean().default(false),
        caFile: caFile.optional(),
        sendingApplication: z.string().min(1).max(40).default("FAXGATE"),
        sendingFacility: z.string().min(1).max(40).default("FAX"),
        receivingApplication: z.string().min(1).max(40),
        receivingFacility: z.string().min(1).max(40),
        /** TXA-2, the document type the EHR files it under */
        documentType: z.string().min(1).max(40).default("FAX"),
        /** MSH-12 */
        version: z.enum(["2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6"]).default("2.5"),
        /** no ACK within this: tried again later with the same control id */
        ackTimeout: duration({ min: "1s", max: "10m" }).prefault("30s"),
      })
      .strict(),
  })
  .strict();

export const webdavDelivery = z
  .object({
    webdav: z
      .object({
        /** the folder's URL, e.g. https://cloud.example/remote.php/dav/files/fax/Inbox */
        url: httpsUrl,
        username: z.string().min(1),
        passwordSecret: secretName,
        ...folderNaming,
        caFile: caFile.optional(),
        timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
      })
      .strict(),
  })
  .strict();

/** `drive` names the drive; `site` the default document library of a SharePoint site. */
const graphFolder = z
  .object({
    /** the directory (tenant) id or its domain, e.g. contoso.onmicrosoft.com */
    tenant: z.string().regex(/^[A-Za-z0-9.-]{1,100}$/, "expected the tenant's id or domain"),
    /** the app registration's application (client) id */
    clientId: z.string().min(1).max(100),
    clientSecret: secretName,
    drive: z
      .string()
      .regex(/^[A-Za-z0-9!_-]{1,200}$/, "expected a drive id")
      .optional(),
    site: z
      .string()
      .regex(/^[A-Za-z0-9.,_-]{1,300}$/, "expected a site id")
      .optional(),
    ...folderNaming,
    /** Graph's base and the token endpoint: left as they are except in tests */
    graphUrl: httpsUrl.default("https://graph.microsoft.com/v1.0"),
    tokenUrl: httpsUrl.optional(),
    /** hosts of the pre-authenticated upload (over 4 MB) and download URLs Graph hands out (a suffix matches) */
    fileHosts: z.array(z.string().min(1).max(100)).default(["sharepoint.com", "1drv.com"]),
    caFile: caFile.optional(),
    timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
  })
  .strict()
  .refine((g) => (g.drive === undefined) !== (g.site === undefined), "name exactly one of drive or site");

export const graphDelivery = z.object({ graph: graphFolder }).strict();

export const smbDelivery = z
  .object({
    smb: z
      .object({
        /** //host/share */
        share: z.string().regex(/^\/\/[^/\s]+\/[^/\s]+$/, 'expected "//host/share"'),
        /** the server's port, when not 445 */
        port: z.number().int().min(1).max(65535).optional(),
        username: z.string().min(1),
        domain: z.string().min(1).optional(),
        passwordSecret: secretName,
        ...folderNaming,
        timeout: duration({ min: "1s", max: "10m" }).prefault("60s"),
      })
      .strict(),
  })
  .strict();

export type FhirDelivery = z.infer<typeof fhirDelivery>["fhir"];
export type Hl7Delivery = z.infer<typeof hl7Delivery>["hl7"];
export type WebdavDelivery = z.infer<typeof webdavDelivery>["webdav"];
export type SmbDelivery = z.infer<typeof smbDelivery>["smb"];
export type GraphDelivery = z.infer<typeof graphDelivery>["graph"];
export type ConnectorDelivery =
  | { fhir: FhirDelivery }
  | { hl7: Hl7Delivery }
  | { webdav: WebdavDelivery }
  | { smb: SmbDelivery }
  | { graph: GraphDelivery };
