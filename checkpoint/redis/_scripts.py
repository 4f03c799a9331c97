"""The Lua scripts of the Redis savers: a step's write, pending writes, the run lock, a read.

Each runs atomically on the server. A script is sent by its SHA1 (``EVALSHA``); the
programs load it on ``NOSCRIPT`` (see ``_programs.run_script``).
"""

from __future__ import annotations

import hashlib

__all__ = ["PUT", "PUT_WRITES", "READ", "RELEASE", "RENEW", "TAKE", "Script"]


class Script:
    """A Lua script and the SHA1 Redis names it by once loaded."""

    __slots__ = ("sha", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()


PUT = Script(
    """
-- ARGV[1]: "expected|ttl_ms|parent|n_fields|want_count|id1|id2|..." (ids are hex: no '|'):
--   a chain of checkpoints, each the parent of the next, growing from 'parent'; the last
--   becomes the head. ARGV[2..]: their records, then n_fields field/value pairs for data.
local h = {}
for part in string.gmatch(ARGV[1] .. '|', '([^|]*)|') do h[#h + 1] = part end
local ids = #h - 5
local cur = redis.call('GET', KEYS[1]) or ''
-- already the head: a client retry of a write that landed before its reply was lost
if cur == h[#h] then return {1, 0} end
if cur ~= h[1] then return {0, cur} end
-- KEYS[6] (a new thread's first write only): the id the thread's delete minted; a
-- write minted before it belongs to a run the delete ended
if cur == '' and KEYS[6] then
  local gone = redis.call('GET', KEYS[6])
  if gone then
    if h[6] < gone then return {2, gone} end
    redis.call('DEL', KEYS[6])
  end
end
local n = tonumber(h[4])
local i = ids + 2
while n > 0 do
  local batch = math.min(n, 256)
  local args = {}
  for j = 1, batch * 2 do args[j] = ARGV[i + j - 1] end
  redis.call('HSET', KEYS[3], unpack(args))
  i = i + batch * 2
  n = n - batch
end
-- the thread's own counter orders its history (ids carry their host's clock)
local top = redis.call('ZREVRANGE', KEYS[5], 0, 0, 'WITHSCORES')
local seq = tonumber(top[2]) or 0
for j = 1, ids do
  redis.call('HSET', KEYS[2], h[5 + j], ARGV[1 + j])
  redis.call('ZADD', KEYS[5], seq + j, h[5 + j])
end
redis.call('SET', KEYS[1], h[#h])
if h[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = h[3] .. '|'
  for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
    if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', KEYS[4], f) end
  end
end
local ttl = tonumber(h[2])
if ttl > 0 then
  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
end
if h[5] == '1' then return {1, redis.call('HLEN', KEYS[2])} end
return {1, 0}
"""
)

PUT_WRITES = Script(
    """
-- ARGV[1]: checkpoint id, ARGV[2]: ttl_ms; ARGV[3..]: field/value pairs for the writes hash
-- only for a checkpoint the thread still holds: a deleted or expired thread stays gone
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
if #ARGV > 2 then redis.call('HSET', KEYS[4], unpack(ARGV, 3)) end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  for k = 1, #KEYS do redis.call('PEXPIRE', KEYS[k], ttl) end
end
return 1
"""
)

# take the lock if it is free or already ours: a retry of a take whose reply was lost
# finds its own token, and that is the lock, taken
TAKE = Script(
    """
local cur = redis.call('GET', KEYS[1])
if cur and cur ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
)

# renew or release the lock only if we still hold it (the token is ours)
RENEW = Script(
    """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
)

RELEASE = Script(
    """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
)

READ = Script(
    """
-- KEYS: head, cp, data, writes. ARGV[1]: a checkpoint id, or '' for the head.
-- ARGV[2]: the id whose record the client already holds ('' if none); then that record's
-- data fields: ARGV[3] = n, n single fields, then (prefix, first, last) triples naming
-- fields prefix..first to prefix..(last - 1) (a log's items). One round trip when the
-- client's guess is right, which is the common case: it wrote (or read) the thread's
-- head itself.
local id = ARGV[1]
if id == '' then
  id = redis.call('GET', KEYS[1])
  if not id then return nil end
end
local writes = {}
if redis.call('EXISTS', KEYS[4]) == 1 then
  local prefix = id .. '|'
  local all = redis.call('HGETALL', KEYS[4])
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, #prefix) == prefix then
      writes[#writes + 1] = string.sub(all[i], #prefix + 1)
      writes[#writes + 1] = all[i + 1]
    end
  end
end
if id ~= ARGV[2] or redis.call('HEXISTS', KEYS[2], id) == 0 then
  return {id, redis.call('HGET', KEYS[2], id), writes}
end
local fields = {}
local n = tonumber(ARGV[3]) or 0
for i = 4, 3 + n do fields[#fields + 1] = ARGV[i] end
local i = 4 + n
while i + 2 <= #ARGV do
  local prefix = ARGV[i]
  for j = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]) - 1 do
    fields[#fields + 1] = prefix .. j
  end
  i = i + 3
end
local values = {}
i = 1
while i <= #fields do
  local last = math.min(i + 255, #fields)
  for _, v in ipairs(redis.call('HMGET', KEYS[3], unpack(fields, i, last))) do
    values[#values + 1] = v
  end
  i = last + 1
end
return {id, false, writes, values}
"""
)
