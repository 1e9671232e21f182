export * from './account';
export * from './constants';
export * from './errors';
export * from './membership';
export * from './mfa';
export * from './role';
export * from './tenant';
