import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authOf } from '../../http/auth.js';
import type { AppServices } from '../../services.js';
import { worldOfAuth } from '../../kernel/world.js';
import { CreateFolderBody, Folder, FolderList, FolderParams, UpdateFolderBody } from './folders.schemas.js';
import { createFolder, deleteFolderOf, listFoldersOf, renameFolderOf } from './folders.service.js';

/** Folders group intakes; GET /v1/intakes?folder_id= lists one folder's intakes. */
export function folderRoutes(app: FastifyInstance, services: AppServices): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const db = services.db.kysely;
  const tags = ['Folders'];

  api.get('/v1/folders', {
    config: { scope: 'intakes:read' },
    schema: { tags, summary: 'List folders', response: { 200: FolderList } },
    handler: (request) => listFoldersOf(db, worldOfAuth(authOf(request))),
  });

  api.post('/v1/folders', {
    config: { scope: 'intakes:write', audit: { action: 'folder.create', resourceType: 'folder' } },
    schema: {
      tags,
      summary: 'Create a folder',
      description: 'Folder names are unique per account and mode (case-insensitive): a duplicate is 409.',
      body: CreateFolderBody,
      response: { 201: Folder },
    },
    handler: async (request, reply) => {
      const folder = await createFolder(db, worldOfAuth(authOf(request)), request.body.name);
      request.auditResourceId = folder.id;
      return reply.code(201).send(folder);
    },
  });

  api.patch('/v1/folders/:id', {
    config: { scope: 'intakes:write', audit: { action: 'folder.rename', resourceType: 'folder' } },
    schema: {
      tags,
      summary: 'Rename a folder',
      params: FolderParams,
      body: UpdateFolderBody,
      response: { 200: Folder },
    },
    handler: (request) => {
      return renameFolderOf(db, worldOfAuth(authOf(request)), request.params.id, request.body.name);
    },
  });

  api.delete('/v1/folders/:id', {
    config: { scope: 'intakes:write', audit: { action: 'folder.delete', resourceType: 'folder' } },
    schema: {
      tags,
      summary: 'Delete a folder',
      description: 'Its intakes are kept, unfiled (folder_id becomes null).',
      params: FolderParams,
      response: { 204: z.null().meta({ description: 'Deleted' }) },
    },
    handler: async (request, reply) => {
      await deleteFolderOf(db, worldOfAuth(authOf(request)), request.params.id);
      return reply.code(204).send(null);
    },
  });
}
