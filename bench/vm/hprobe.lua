-- hprobe.lua: hprobe.pna in Lua (LuaJIT): look up the string keys of region `hq` (a length
-- byte, then the key) in the open-addressing table `htab` (16-byte slots: u32 key offset in
-- `hkeys`, u32 key length, 0 for empty; u64 value), linear probing from FNV-1a & mask; the
-- sum of the values found + the number of misses, mod 2^64.  FNV-1a on uint64_t cdata.
local ffi = require("ffi")
local bxor, band = bit.bxor, bit.band
return { regions = { "htab", "hkeys", "hq" }, run = function(r)
	local t32 = ffi.cast("const uint32_t *", r.htab)
	local t64 = ffi.cast("const uint64_t *", r.htab)
	local keys, q, n = r.hkeys, r.hq, r.hq_len
	local mask = r.htab_len / 16 - 1
	local s, i = 0ULL, 0
	while i < n do
		local len = q[i]
		i = i + 1
		local h = 0xcbf29ce484222325ULL
		for j = i, i + len - 1 do
			h = bxor(h, q[j]) * 0x100000001b3ULL
		end
		local slot = tonumber(band(h, mask))
		while true do
			local klen = t32[slot * 4 + 1]
			if klen == 0 then
				s = s + 1
				break
			end
			if klen == len then
				local koff, j = t32[slot * 4], 0
				while j < len and keys[koff + j] == q[i + j] do j = j + 1 end
				if j == len then
					s = s + t64[slot * 2 + 1]
					break
				end
			end
			slot = band(slot + 1, mask)
		end
		i = i + len
	end
	return s
end }
