-- fnv1a.lua: fnv1a.pna in Lua (LuaJIT): 64-bit FNV-1a of region `data`, on uint64_t cdata
-- (a Lua number cannot hold the wrapping 64-bit product).
local bxor = bit.bxor
return { regions = { "data" }, run = function(r)
	local p, h = r.data, 0xcbf29ce484222325ULL
	for i = 0, r.data_len - 1 do
		h = bxor(h, p[i]) * 0x100000001b3ULL
	end
	return h
end }
