export const LOCAL_BASE_IMAGE: string;
export function makeBaseImage(image?: string, buildah?: readonly string[]): Promise<string>;
