-- count_nl.lua: count_nl.pna in Lua (LuaJIT): the '\n' bytes of region `data`.
return { regions = { "data" }, run = function(r)
	local p, c = r.data, 0
	for i = 0, r.data_len - 1 do
		if p[i] == 10 then c = c + 1 end
	end
	return c
end }
