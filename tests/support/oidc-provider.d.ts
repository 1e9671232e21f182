// oidc-provider 8 ships no types (the @types package follows major 9); the test IdP uses it loosely.
declare module 'oidc-provider';
