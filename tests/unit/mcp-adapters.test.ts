import { describeToolResult, formQuestion, readFormAnswer, SessionFiles, ToolExecutionError, toolName } from '@stepwise/backend';
import { describe, expect, it } from 'vitest';

const form = {
  properties: {
    name: { type: 'string', description: 'Your name' },
    age: { type: 'integer' },
    agree: { type: 'boolean', default: false },
    color: { type: 'string', enum: ['red', 'green'], enumNames: ['Red', 'Green'] },
    hero: {
      type: 'string',
      oneOf: [
        { const: 'h1', title: 'Superman' },
        { const: 'h2', title: 'Batman' },
      ],
    },
  },
  required: ['name'],
};

describe('MCP elicitation in words', () => {
  it('describes each field of the form in the question', () => {
    const question = formQuestion('everything', 'Tell me about you', form);
    expect(question).toContain('everything asks: Tell me about you');
    expect(question).toContain('- name (string, required): Your name');
    expect(question).toContain('- agree (boolean, optional, default false)');
    expect(question).toContain('[h1 = Superman, h2 = Batman]');
  });

  it('puts a free-text answer into the one required field and fills defaults', () => {
    expect(readFormAnswer('Ada Lovelace', form)).toEqual({ action: 'accept', content: { name: 'Ada Lovelace', agree: false } });
  });

  it('reads "field: value" lines and JSON, coercing numbers, booleans and choices by value or title', () => {
    expect(readFormAnswer('name: Ada\nage: 36\nagree: yes\ncolor: Green\nhero: superman', form)).toEqual({
      action: 'accept',
      content: { name: 'Ada', age: 36, agree: true, color: 'green', hero: 'h1' },
    });
    expect(readFormAnswer('{"name":"Ada","age":36}', form)).toEqual({ action: 'accept', content: { name: 'Ada', age: 36, agree: false } });
  });

  it('asks again when a value does not fit, and passes decline and cancel on', () => {
    expect(readFormAnswer('name: Ada\nage: old', form)).toMatchObject({ action: 'retry', problem: expect.stringContaining('age') });
    expect(readFormAnswer('age: 3', form)).toMatchObject({ action: 'retry', problem: 'Missing name' });
    expect(readFormAnswer('decline', form)).toEqual({ action: 'decline' });
    expect(readFormAnswer('Cancel', form)).toEqual({ action: 'cancel' });
  });
});

describe('MCP tool results for the model', () => {
  const saved: { bytes: number; mimeType: string }[] = [];
  const save = async (bytes: Buffer, mimeType: string) => {
    saved.push({ bytes: bytes.byteLength, mimeType });
    return `file-${saved.length}.png`;
  };

  it('keeps text, saves images as files and refers to them, inlines text resources and lists links', async () => {
    const text = await describeToolResult(
      {
        content: [
          { type: 'text', text: 'Here you go' },
          { type: 'image', data: Buffer.from('png bytes').toString('base64'), mimeType: 'image/png' },
          { type: 'resource', resource: { uri: 'test://doc/1', mimeType: 'text/plain', text: 'Resource body' } },
          { type: 'resource_link', uri: 'test://doc/2', name: 'Second', description: 'another doc' },
        ],
      },
      save,
    );
    expect(text).toBe(
      'Here you go\n[image image/png, 9 B, saved as session file "file-1.png"]\n[resource test://doc/1 (text/plain)]\nResource body\n[resource link Second test://doc/2: another doc]',
    );
    expect(saved).toEqual([{ bytes: 9, mimeType: 'image/png' }]);
  });

  it('turns isError into a tool error with the server’s message', async () => {
    await expect(describeToolResult({ content: [{ type: 'text', text: 'no such city' }], isError: true }, save)).rejects.toThrow(ToolExecutionError);
    await expect(describeToolResult({ content: [{ type: 'text', text: 'no such city' }], isError: true }, save)).rejects.toThrow('no such city');
  });

  it('falls back to structured content when there is no content', async () => {
    expect(await describeToolResult({ content: [], structuredContent: { temperature: 21 } }, save)).toBe('{"temperature":21}');
  });

  it('names tools SERVER__TOOL in the alphabet models accept, at most 64 characters', () => {
    expect(toolName('everything', 'echo')).toBe('everything__echo');
    expect(toolName('fs', 'read.file/v2')).toBe('fs__read_file_v2');
    expect(toolName('s', 'x'.repeat(100))).toHaveLength(64);
  });
});

describe('session file names', () => {
  it.each(['notes.txt', 'Résumé 2026.pdf', 'a'.repeat(255)])('accepts %j', (name) => {
    expect(SessionFiles.checkName(name)).toBe(name.normalize('NFC'));
  });

  it.each(['', '.', '..', '../x', 'a/b', 'a\\b', '/etc/passwd', '.env', 'a\0b', 'tab\there', ' padded', 'é'.repeat(128)])('refuses %j', (name) => {
    expect(() => SessionFiles.checkName(name)).toThrow(expect.objectContaining({ code: 'invalid_file_name' }));
  });

  it('upload names get reserved characters replaced, not path parts', () => {
    expect(SessionFiles.uploadName(' report: "final"?.txt ')).toBe('report_ _final__.txt');
    expect(() => SessionFiles.uploadName('../report.txt')).toThrow();
  });
});
