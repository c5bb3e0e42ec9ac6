"""Lua scripts of the Redis store: each runs atomically on the server.

Key layout under the store's prefix ``P`` (``D`` = digest of a session id, see
:func:`~._codec.key_digest`; message ids are stored as :func:`~._codec.encode_key` text):

==========================  ==============================================================
``P schema``                the version of this layout (see ``_redis_schema``)
``P sessions``              SET of every session's D
``P ws:<digest>``           SET of the D of a workspace's sessions
``P user:<digest>``         SET of the D of the sessions whose metadata ``user_id`` matches
``P s:D:meta``              HASH id, workspace, metadata, user_id, created_at, updated_at,
                            last_seq
``P s:D:order``             ZSET message id scored by its sequence number (store order)
``P s:D:bodies``            HASH message id -> stored JSON
``P s:D:times``             ZSET message id scored by the time it was stored (retention)
``P s:D:offload``           HASH message id -> the original of an offloaded tool output
``P s:D:tokens``            HASH message id -> JSON ``{counter: tokens}``
``P s:D:summary``           HASH revision, data (JSON)
``P s:D:migrations``        LIST of JSON migration records
``P s:D:vectors``           HASH message id -> JSON ``{model key: base64 vector}`` (._vectors)
``P s:D:leases``            SET of the session's lease keys (deleted with the session)
``P s:D:words``             HASH message id -> its searchable words, space-separated (as
                            12-hex-digit digests: see ``_redis_search``)
``P s:D:wordcounts``        HASH word -> how many of the session's messages hold it
``P w:<word>``              SET of the D of the sessions holding the word (its count above 0)
``P s:D:lease:<digest>``    STRING the owner of a lease (by the digest of its name), expiring
                            (``PX``) with the lease
==========================  ==============================================================
"""

from __future__ import annotations

from session_migrator.store._redis_schema import GUARD

__all__ = [
    "ACQUIRE_LEASE",
    "APPEND",
    "DELETE_IDS",
    "LOAD",
    "LOG_MIGRATION",
    "PUT_SUMMARY",
    "PUT_TOKENS",
    "RELEASE_LEASE",
]

#: KEYS meta order bodies times offload all-sessions workspace-set user-set words wordcounts
#: schema; ARGV session-id workspace metadata user-id('' = none) now digest word-key-prefix, then
#: (id body full words) quadruples.
APPEND = (
    GUARD
    + """
local meta, order, bodies, times, offload = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local words, counts = KEYS[9], KEYS[10]
if redis.call('EXISTS', meta) == 0 then
  redis.call('HSET', meta, 'id', ARGV[1], 'workspace', ARGV[2], 'metadata', ARGV[3],
             'user_id', ARGV[4], 'created_at', ARGV[5], 'updated_at', ARGV[5], 'last_seq', 0)
  redis.call('SADD', KEYS[6], ARGV[6])
  redis.call('SADD', KEYS[7], ARGV[6])
  if ARGV[4] ~= '' then redis.call('SADD', KEYS[8], ARGV[6]) end
end
local seq = tonumber(redis.call('HGET', meta, 'last_seq'))
local added = 0
for i = 8, #ARGV, 4 do
  local id = ARGV[i]
  if redis.call('HSETNX', bodies, id, ARGV[i + 1]) == 1 then
    seq = seq + 1
    added = added + 1
    redis.call('ZADD', order, seq, id)
    redis.call('ZADD', times, ARGV[5], id)
    if ARGV[i + 2] ~= '' then redis.call('HSET', offload, id, ARGV[i + 2]) end
    if ARGV[i + 3] ~= '' then
      redis.call('HSET', words, id, ARGV[i + 3])
      for w in string.gmatch(ARGV[i + 3], '%S+') do
        if redis.call('HINCRBY', counts, w, 1) == 1 then
          redis.call('SADD', ARGV[7] .. w, ARGV[6])
        end
      end
    end
  end
end
if added > 0 then redis.call('HSET', meta, 'last_seq', seq, 'updated_at', ARGV[5]) end
return added
"""
)

#: KEYS meta order bodies; ARGV has-after('0'|'1') after-id.
#: Returns {0} (no session), {2} (after not found) or {1, message count, body, body, ...}.
LOAD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
local low = '-inf'
if ARGV[1] == '1' then
  local score = redis.call('ZSCORE', KEYS[2], ARGV[2])
  if not score then return {2} end
  low = '(' .. score
end
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], low, '+inf')
local out = {1, redis.call('ZCARD', KEYS[2])}
for i = 1, #ids, 1000 do
  local chunk = {}
  for j = i, math.min(i + 999, #ids) do chunk[#chunk + 1] = ids[j] end
  local found = redis.call('HMGET', KEYS[3], unpack(chunk))
  for k = 1, #chunk do out[#out + 1] = found[k] end
end
return out
"""

#: KEYS meta order bodies times offload tokens vectors words wordcounts; ARGV word-key-prefix
#: digest, then message ids. Returns the number deleted.
DELETE_IDS = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local n = 0
for i = 3, #ARGV do
  local held = redis.call('HGET', KEYS[8], ARGV[i])
  if held then
    for w in string.gmatch(held, '%S+') do
      if redis.call('HINCRBY', KEYS[9], w, -1) <= 0 then
        redis.call('HDEL', KEYS[9], w)
        redis.call('SREM', ARGV[1] .. w, ARGV[2])
      end
    end
    redis.call('HDEL', KEYS[8], ARGV[i])
  end
  n = n + redis.call('HDEL', KEYS[3], ARGV[i])
  redis.call('ZREM', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[4], ARGV[i])
  redis.call('HDEL', KEYS[5], ARGV[i])
  redis.call('HDEL', KEYS[6], ARGV[i])
  redis.call('HDEL', KEYS[7], ARGV[i])
end
return n
"""

#: KEYS meta summary; ARGV expected-revision new-revision data.
#: Returns {1} (written), {0, current} (conflict) or {-1} (no session).
PUT_SUMMARY = """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local current = tonumber(redis.call('HGET', KEYS[2], 'revision') or '0')
if current ~= tonumber(ARGV[1]) then return {0, current} end
redis.call('HSET', KEYS[2], 'revision', ARGV[2], 'data', ARGV[3])
return {1}
"""

#: KEYS bodies tokens; ARGV counter, then (id tokens) pairs. Counts of unknown ids are dropped.
PUT_TOKENS = """
for i = 2, #ARGV, 2 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    local current = redis.call('HGET', KEYS[2], ARGV[i])
    local counts = {}
    if current then counts = cjson.decode(current) end
    counts[ARGV[1]] = tonumber(ARGV[i + 1])
    redis.call('HSET', KEYS[2], ARGV[i], cjson.encode(counts))
  end
end
return 0
"""

#: KEYS meta migrations; ARGV record JSON. Returns 1, or -1 when there is no session.
LOG_MIGRATION = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
"""

#: KEYS meta lease leases schema; ARGV owner ttl-ms. Returns 1 (held now: taken, or the owner's
#: own, renewed), 0 (another owner holds it) or -1 (no session).
ACQUIRE_LEASE = (
    GUARD
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('SADD', KEYS[3], KEYS[2])
  return 1
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
  return 1
end
return 0
"""
)

#: KEYS lease leases; ARGV owner. Compare and delete: returns 1 when the owner's lease was
#: dropped, else 0.
RELEASE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], KEYS[1])
  return 1
end
return 0
"""
