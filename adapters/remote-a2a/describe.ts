// The downstream card's name, description and skills, re-published on this gateway's card
// wherever the agent's configuration sets none (or with `skills: "from downstream"`). Only those
// fields travel: the interfaces, security and signatures of the card stay the gateway's. Skills
// are offered under this gateway's security, so the downstream's per-skill security requirements
// are dropped (callers never talk to the downstream; the gateway does, with its own credentials).
// Skills only the downstream's extended card lists become our extended skills.
import { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import type { AdapterDescription } from '../types.ts';
import type { AgentCard, AgentSkill } from '../../src/protocol/types.ts';
import type { DownstreamConnection } from './downstream-agent.ts';

function skillOf(skill: AgentSkill): AgentSkill {
  const result: AgentSkill = { id: skill.id, name: skill.name, description: skill.description ?? '', tags: skill.tags ?? [] };
  if (skill.examples !== undefined && skill.examples.length > 0) result.examples = skill.examples;
  if (skill.inputModes !== undefined && skill.inputModes.length > 0) result.inputModes = skill.inputModes;
  if (skill.outputModes !== undefined && skill.outputModes.length > 0) result.outputModes = skill.outputModes;
  return result;
}

/** The extended card's extra skills, or none when the downstream has no extended card or refuses it. */
async function extendedSkillsOf(connection: DownstreamConnection, publicIds: ReadonlySet<string>): Promise<AgentSkill[]> {
  if (connection.card.capabilities?.extendedAgentCard !== true) return [];
  try {
    const client = await connection.newClient();
    const extended = SdkAgentCard.toJSON(await client.getAgentCard()) as AgentCard;
    return (extended.skills ?? []).filter((s) => !publicIds.has(s.id)).map(skillOf);
  } catch {
    // The public skills are still worth publishing.
    return [];
  }
}

export async function describeDownstream(connection: DownstreamConnection): Promise<AdapterDescription> {
  const card = connection.card;
  const skills = (card.skills ?? []).map(skillOf);
  const description: AdapterDescription = { skills };
  if (card.name !== undefined && card.name.trim() !== '') description.name = card.name;
  const extendedSkills = await extendedSkillsOf(connection, new Set(skills.map((s) => s.id)));
  if (extendedSkills.length > 0) description.extendedSkills = extendedSkills;
  if (card.description !== undefined && card.description !== '') description.description = card.description;
  if (card.defaultInputModes !== undefined && card.defaultInputModes.length > 0) description.defaultInputModes = card.defaultInputModes;
  if (card.defaultOutputModes !== undefined && card.defaultOutputModes.length > 0) description.defaultOutputModes = card.defaultOutputModes;
  return description;
}
