import type { Mailer } from '../../infra/mail';
import type { Queryable } from '../../infra/postgres/db';
import type { OwnerDirectory } from './lookups';

/**
 * Telling a tenant's admins about its files (spec 002: an infected upload notifies the tenant
 * admin). A small port until the platform's notification hub exists; today it mails the tenant's
 * Owners through the kernel's mail port.
 */
export interface InfectedFile {
  tenantId: string;
  fileId: string;
  originalName: string;
  signature: string;
  uploadedBy: string;
  at: string;
}

export interface FileNotices {
  infected(file: InfectedFile): Promise<void>;
}

export const mailNotices = (db: Queryable, mail: Mailer, owners: OwnerDirectory): FileNotices => ({
  async infected(file) {
    const to = await owners.ownerEmails(db, file.tenantId);
    if (to.length === 0) return;
    await mail.send({
      to,
      subject: 'An uploaded file was rejected: malware found',
      text: [
        'The virus scan found malware in a file uploaded to your organization, and the file was rejected and removed.',
        '',
        `File id: ${file.fileId}`,
        `File name: ${JSON.stringify(file.originalName)}`,
        `Found: ${file.signature}`,
        `Uploaded by user: ${file.uploadedBy}`,
        `At: ${file.at}`,
        '',
        'Nothing of the file was stored. You may want to check the device it came from.',
      ].join('\n'),
      headers: { 'X-Platform-Notice': 'files.file.infected' },
    });
  },
});
