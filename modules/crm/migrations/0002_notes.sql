-- Notes about a contact: the relation contact (notes.contact_id → contacts.id).
CREATE TABLE notes (
  tenant_id  text NOT NULL,
  id         uuid PRIMARY KEY,
  contact_id uuid REFERENCES contacts (id),
  body       text
);
CREATE INDEX notes_by_contact ON notes (tenant_id, contact_id);
