// oidc-provider v9 ships no types (and @types/oidc-provider is not installed): the little of it
// test/helpers/oidc.ts uses, declared here.
declare module "oidc-provider" {
  import type { IncomingMessage, ServerResponse } from "node:http";

  interface InteractionDetails {
    uid: string;
    prompt: { name: string; reasons: string[] };
    params: Record<string, unknown>;
    session?: { accountId: string };
  }

  interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    Grant: new (init: {
      accountId: string;
      clientId: string;
    }) => Grant;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
  }
}
