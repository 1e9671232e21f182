import type { Kernel } from '../../infra/kernel';
import type { OwnerDirectory } from './lookups';

/**
 * Telling a tenant's admins about an infected upload (spec 002), through the platform's
 * notification port (kernel.notifications): queued with retries and a history where the
 * notification service runs (recipients by user id, so their preferences apply), one mail through
 * the mail port otherwise (recipients by address).
 */
export interface InfectedFile {
  tenantId: string;
  fileId: string;
  originalName: string;
  signature: string;
  uploadedBy: string;
  at: string;
}

export const notifyInfected = async (kernel: Kernel, owners: OwnerDirectory, file: InfectedFile): Promise<void> => {
  const body = [
    'The virus scan found malware in a file uploaded to your organization, and the file was rejected and removed.',
    '',
    `File id: ${file.fileId}`,
    `File name: ${JSON.stringify(file.originalName)}`,
    `Found: ${file.signature}`,
    `Uploaded by user: ${file.uploadedBy}`,
    `At: ${file.at}`,
    '',
    'Nothing of the file was stored. You may want to check the device it came from.',
  ].join('\n');
  const byUserId = kernel.notifications.kind === 'notify';
  for (const owner of await owners.owners(kernel.db, file.tenantId)) {
    await kernel.notifications.send({
      tenantId: file.tenantId,
      recipient: byUserId ? { userId: owner.userId } : { address: owner.email },
      subject: 'An uploaded file was rejected: malware found',
      body,
      headers: { 'X-Platform-Notice': 'files.file.infected' },
      priority: 'high',
      purpose: 'file-infected',
      module: 'files',
    });
  }
};
